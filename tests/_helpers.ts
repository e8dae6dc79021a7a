/** @module Test wiring: the gateway over real HTTP on port 0, a fixed test config, seeded tokens and fixtures. */
import { recordFirstServed, undatedModels } from "../src/access/model_dates.ts";
import { createStore, seedGroups, type Store } from "../src/access/store.ts";
import { createApp } from "../src/app.ts";
import type { NativeSweep } from "../src/batches/native_sweep.ts";
import { startGatewayBatches } from "../src/batches/start.ts";
import type { Config } from "../src/core/config.ts";
import { parseConfig } from "../src/core/config_load.ts";
import type { Exchange } from "../src/core/exchange.ts";
import { createKvWriter } from "../src/core/kv_write.ts";
import type { Deps } from "../src/handlers/context.ts";
import { buildDeps, upstreamTransports } from "../src/serve/deps.ts";
import { buildRouteTable, type RouteTable } from "../src/relay/routing.ts";
import type { FakeUpstream } from "./_fake_upstream.ts";
import { deadlineFetch, shutdownWithin, within } from "./_reads.ts";

export { bodyReader, deadlineFetch, readSse, readText, within } from "./_reads.ts";

/** The upstream keys of the test config; tests assert that they, and never the client's token, go upstream. */
export const UPSTREAM_KEYS = { TEST_ANTHROPIC_KEY: "upstream-anthropic-key", TEST_OPENAI_KEY: "upstream-openai-key" };

/** Forty-five bulk models, enough to page through at the default limit of 20. */
export const BULK_MODELS = Array.from({ length: 45 }, (_, i) => `bulk-${String(i).padStart(2, "0")}`);

/** The test config pointing at a fake upstream; `extra` appends YAML to the first upstream. */
export function testConfigYaml(upstreamUrl: string, options: GatewayOptions = {}) {
  return `${options.extraYaml ?? ""}
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
max_body_bytes: ${options.maxBodyBytes ?? 1048576}
routing: { deadline_ms: 5000, failure_threshold: ${options.failureThreshold ?? 3}${
    options.routing ? `, ${options.routing}` : ""
  } }
upstreams:
  - name: anth
    protocol: anthropic
    base_url: ${upstreamUrl}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    timeout_ms: ${options.timeoutMs ?? 5000}${
    options.maxAnswerBytes ? `\n    max_answer_bytes: ${options.maxAnswerBytes}` : ""
  }
    models:
      - claude-test
      - { id: alias, upstream_id: claude-test, display_name: "Alias of claude-test", created_at: "2026-01-02T03:04:05Z" }
  - name: oai
    protocol: openai
    base_url: ${upstreamUrl}/oai/v1
    api_key_env: TEST_OPENAI_KEY
    timeout_ms: ${options.timeoutMs ?? 5000}${
    options.maxAnswerBytes ? `\n    max_answer_bytes: ${options.maxAnswerBytes}` : ""
  }
    max_output_tokens: 8192
    models: [gpt-test]
  - name: nokey
    protocol: anthropic
    base_url: ${upstreamUrl}/nokey/v1
    api_key_env: TEST_MISSING_KEY
    models: [claude-nokey]
  - name: bulk
    protocol: anthropic
    base_url: ${upstreamUrl}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    models: [${BULK_MODELS.join(", ")}]
  - name: ha1
    protocol: anthropic
    base_url: ${options.ha1Url ?? upstreamUrl}/ha1/v1
    api_key_env: TEST_ANTHROPIC_KEY
    priority: 1
    timeout_ms: ${options.timeoutMs ?? 5000}
    idle_timeout_ms: ${options.idleTimeoutMs ?? 5000}
    models: [claude-ha]
  - name: ha2
    protocol: anthropic
    base_url: ${upstreamUrl}/ha2/v1
    api_key_env: TEST_ANTHROPIC_KEY
    models: [claude-ha]
  - name: hb1
    protocol: openai
    base_url: ${options.ha1Url ?? upstreamUrl}/hb1/v1
    api_key_env: TEST_OPENAI_KEY
    priority: 1
    timeout_ms: ${options.timeoutMs ?? 5000}
    idle_timeout_ms: ${options.idleTimeoutMs ?? 5000}
    models: [gpt-ha]
  - name: hb2
    protocol: openai
    base_url: ${upstreamUrl}/hb2/v1
    api_key_env: TEST_OPENAI_KEY
    models: [gpt-ha]
${options.extraUpstreams ?? ""}
groups:
  - { name: default, listing: anthropic, models: [claude-test, alias, claude-nokey, gpt-test, claude-ha] }
  - { name: oa, listing: openai, models: [gpt-test, claude-test, gpt-ha] }
  - { name: auto, listing: auto, models: [claude-test] }
  - { name: bulk, listing: anthropic, models: [${BULK_MODELS.join(", ")}] }
${options.extraGroups ?? ""}
usage: { flush_ms: ${options.flushMs ?? 60000}, auth_refresh_ms: 100 }
`;
}

/** Knobs of the test config. */
export interface GatewayOptions {
  timeoutMs?: number;
  /** `max_answer_bytes` of the anth and oai upstreams. */
  maxAnswerBytes?: number;
  idleTimeoutMs?: number;
  maxBodyBytes?: number;
  failureThreshold?: number;
  /** Base URL for the first-priority upstreams ha1/hb1, when they must live elsewhere (e.g. a reset server). */
  ha1Url?: string;
  /** Top-level YAML put before the test config's keys, e.g. a `log:` or `metrics:` section. */
  extraYaml?: string;
  /** Environment beyond the upstream keys, e.g. MODELGATE_ADMIN_KEY. */
  env?: Record<string, string>;
  /** YAML list items appended to `groups:`. */
  extraGroups?: string;
  /** YAML list items appended to `upstreams:`. */
  extraUpstreams?: string;
  /** More `routing:` entries in flow style, e.g. `retry_budget: { ratio: 0 }`. */
  routing?: string;
  /** Usage flush interval; long by default so tests flush when they choose. */
  flushMs?: number;
}

/** A gateway under test, reachable over HTTP. */
export interface TestGateway extends AsyncDisposable {
  url: string;
  store: Store;
  /** A live token secret per group. */
  tokens: Record<"default" | "oa" | "auto" | "bulk", string>;
  logs: Record<string, unknown>[];
  /** Every exchange that has begun (the handler is running or done), in the order they arrived. */
  started: Exchange[];
  /** Every finished exchange, in the order they finished. */
  exchanges: Exchange[];
  /** The app's dependencies, for the operator side (usage flush, token cache). */
  deps: Deps;
  /** Writes batched usage to KV now. */
  flush(): Promise<void>;
  /** The sweep of native batches, when the gateway runs batches (`batches` in the options). */
  sweep?: NativeSweep;
  /** Calls the admin API with the test admin key unless headers say otherwise. */
  admin(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<Response>;
  /** POSTs JSON with the default group's token in x-api-key unless headers say otherwise. */
  post(path: string, body: unknown, headers?: HeadersInit): Promise<Response>;
}

/** The admin key of test gateways started with `admin: true`. */
export const ADMIN_KEY = "test-admin-key-0123456789-abcdefghij";

/** Options for {@linkcode startGateway}. */
export interface StartOptions extends GatewayOptions {
  /** A KV handle shared with another gateway (as two instances share one KV); the caller closes it. */
  kv?: Deno.Kv;
  /** Turns the admin API on with {@linkcode ADMIN_KEY}. */
  admin?: boolean;
  /** The gateway's clock. */
  now?(): Date;
  /** How the gateway waits out a retry-after; tests note the wait and move their clock instead. */
  sleep?(ms: number, signal: AbortSignal): Promise<boolean>;
  /** A whole config to run instead of the test config; tokens are made only for the groups it has. */
  configYaml?: string;
  /** The weighted choice's randomness, in [0, 1). */
  random?(): number;
  /** How long teardown waits for open responses before it ends them and fails the test (default 5 s). */
  shutdownGraceMs?: number;
  /** Aborted to make the gateway stop as after SIGTERM (its sockets drain and close). */
  stopping?: AbortSignal;
  /** The gateway's fetch, for upstreams and the identity provider alike. */
  fetch?: typeof fetch;
  /**
   * Runs the batches the gateway runs itself on this gateway (as `serve` does), its claims under this name, and the
   * sweep of native batches.
   */
  batches?: { instance?: string };
}

/** Starts the app on 127.0.0.1 port 0 with an in-memory KV and one token per group. */
export async function startGateway(upstreamUrl: string, options: StartOptions = {}): Promise<TestGateway> {
  const config = parseConfig(options.configYaml ?? testConfigYaml(upstreamUrl, options), "test.yaml");
  const keys: Record<string, string> = {
    ...UPSTREAM_KEYS,
    ...options.admin ? { MODELGATE_ADMIN_KEY: ADMIN_KEY } : {},
    ...options.env,
  };
  const env = (name: string) => keys[name];
  const logs: Record<string, unknown>[] = [];
  // A busy KV is retried at once: the backoff's delays are checked on their own, and tests never sleep.
  const writes = createKvWriter({ log: (line) => logs.push(line), sleep: () => Promise.resolve() });
  const store = createStore(options.kv ?? await Deno.openKv(":memory:"), { writes });
  await seedGroups(store, config.groups);
  const tokens = {} as TestGateway["tokens"];
  for (const group of ["default", "oa", "auto", "bulk"] as const) {
    if (config.groups.some((g) => g.name === group)) tokens[group] = (await store.createToken({ group })).secret;
  }
  const exchanges: Exchange[] = [];
  const started: Exchange[] = [];
  const closing = new AbortController();
  const firstServed = await recordFirstServed(store.kv, undatedModels(config), options.now?.() ?? new Date());
  const deps = buildDeps(config, store, {
    firstServed,
    env,
    log: (line) => logs.push(line),
    now: options.now,
    sleep: options.sleep,
    random: options.random,
    closing: closing.signal,
    stopping: options.stopping,
    fetch: options.fetch,
    observers: [{
      start: (exchange) => void started.push(exchange),
      finish: (exchange) => void exchanges.push(structuredClone(exchange)),
    }],
  });
  const batches = options.batches ? startGatewayBatches(deps, options.batches.instance) : undefined;
  if (batches) deps.batchRunner = batches.api;
  const app = createApp(deps);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app);
  const url = `http://127.0.0.1:${server.addr.port}`;
  const fetchWithDeadline = deadlineFetch();
  return {
    url,
    store,
    tokens,
    logs,
    started,
    exchanges,
    deps,
    flush: () => deps.operator.usage.flush(),
    sweep: batches?.sweep,
    admin: (method, path, body, headers) =>
      fetchWithDeadline(`${url}${path}`, {
        method,
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_KEY}`, ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      }),
    post: (path, body, headers) =>
      fetchWithDeadline(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": tokens.default, ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    async [Symbol.asyncDispose]() {
      const late = await shutdownWithin(server, closing, options.shutdownGraceMs ?? 5000);
      await batches?.runner.stop();
      await batches?.sweep.stop();
      await deps.operator.close();
      await deps.mcp.close();
      await deps.pins.settled();
      if (!options.kv) store.close();
      if (late) {
        throw new Error(
          `The gateway under test still had a response open ${late} ms after its shutdown began, so it was ended: ` +
            "read every response to its end, or cancel its reader in finally (await using bodyReader(res))",
        );
      }
    },
  };
}

/** The route table of a config whose upstreams' credentials come from `env`, as `serve` builds it. */
export function routeTableFor(config: Config, env: (name: string) => string | undefined): RouteTable {
  const transports = upstreamTransports(config, { env, log: () => {} });
  return buildRouteTable(config, (upstream) => transports.get(upstream.name)?.transport);
}

/** A minimal valid Messages request body. */
export function messagesBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: "claude-test", max_tokens: 16, messages: [{ role: "user", content: "Hi" }], ...extra };
}

/** A minimal Anthropic message response. */
export function anthropicMessage(text = "Hello"): Record<string, unknown> {
  return {
    id: "msg_up",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content: [{ type: "text", text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

/** Reads a fixture file under tests/fixtures. */
export function fixture(name: string): string {
  return Deno.readTextFileSync(new URL(`./fixtures/${name}`, import.meta.url));
}

/** Resolves with the first non-undefined value `read` gives, checking after each macrotask; throws if it never comes. */
export async function waitFor<T>(read: () => T | undefined): Promise<T> {
  for (let i = 0; i < 1000; i++) {
    const value = read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  throw new Error("waitFor: condition never held");
}

/**
 * Sends a non-streamed Messages request and gives up on it once the upstream holds it (its `index`th request);
 * resolves when the gateway has let the upstream call go.
 */
export async function leaveWhileUpstreamWaits(gw: TestGateway, upstream: FakeUpstream, index = 0): Promise<void> {
  const controller = new AbortController();
  const pending = fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": gw.tokens.default, "content-type": "application/json" },
    body: JSON.stringify(messagesBody()),
    signal: controller.signal,
  });
  await waitFor(() => upstream.requests[index]);
  controller.abort();
  await pending.then(() => Promise.reject(new Error("the request was answered")), () => {});
  await within(upstream.requests[index].closed, 2000, "the upstream request closing");
}

/** The first event of an SSE text, with its blank-line terminator. */
export function firstEvent(sse: string): string {
  const end = sse.indexOf("\n\n");
  if (end < 0) throw new Error("firstEvent: no complete event in the text");
  return sse.slice(0, end + 2);
}

/** A limit counter as KV holds it (a Deno.KvU64), as a bigint; null when its window has none. */
export async function limitCounter(kv: Deno.Kv, key: Deno.KvKey): Promise<bigint | null> {
  const { value } = await kv.get(key);
  if (value === null) return null;
  if (!(value instanceof Deno.KvU64)) throw new Error(`limit counter ${JSON.stringify(key)} is not a KvU64`);
  return value.value;
}
