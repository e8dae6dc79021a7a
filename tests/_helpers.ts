/** @module Test wiring: the gateway over real HTTP on port 0, a fixed test config, seeded tokens and SSE readers. */
import { createApp } from "../src/app.ts";
import { parseConfig } from "../src/config.ts";
import { buildRouteTable } from "../src/routing.ts";
import { createStore, seedGroups, type Store } from "../src/store.ts";
import { type SseMessage, SseParser } from "../src/sse.ts";

/** The upstream keys of the test config; tests assert that they, and never the client's token, go upstream. */
export const UPSTREAM_KEYS = { TEST_ANTHROPIC_KEY: "upstream-anthropic-key", TEST_OPENAI_KEY: "upstream-openai-key" };

/** Forty-five bulk models, enough to page through at the default limit of 20. */
export const BULK_MODELS = Array.from({ length: 45 }, (_, i) => `bulk-${String(i).padStart(2, "0")}`);

/** The test config pointing at a fake upstream; `extra` appends YAML to the first upstream. */
export function testConfigYaml(upstreamUrl: string, options: { timeoutMs?: number; maxBodyBytes?: number } = {}) {
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
max_body_bytes: ${options.maxBodyBytes ?? 1048576}
upstreams:
  - name: anth
    protocol: anthropic
    base_url: ${upstreamUrl}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    timeout_ms: ${options.timeoutMs ?? 5000}
    models:
      - claude-test
      - { id: alias, upstream_id: claude-test, display_name: "Alias of claude-test", created_at: "2026-01-02T03:04:05Z" }
  - name: oai
    protocol: openai
    base_url: ${upstreamUrl}/oai/v1
    api_key_env: TEST_OPENAI_KEY
    timeout_ms: ${options.timeoutMs ?? 5000}
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
groups:
  - { name: default, listing: anthropic, models: [claude-test, alias, claude-nokey, gpt-test] }
  - { name: oa, listing: openai, models: [gpt-test, claude-test] }
  - { name: auto, listing: auto, models: [claude-test] }
  - { name: bulk, listing: anthropic, models: [${BULK_MODELS.join(", ")}] }
`;
}

/** A gateway under test, reachable over HTTP. */
export interface TestGateway extends AsyncDisposable {
  url: string;
  store: Store;
  /** A live token secret per group. */
  tokens: Record<"default" | "oa" | "auto" | "bulk", string>;
  logs: Record<string, unknown>[];
  /** POSTs JSON with the default group's token in x-api-key unless headers say otherwise. */
  post(path: string, body: unknown, headers?: HeadersInit): Promise<Response>;
}

/** Starts the app on 127.0.0.1 port 0 with an in-memory KV and one token per group. */
export async function startGateway(
  upstreamUrl: string,
  options: { timeoutMs?: number; maxBodyBytes?: number; kv?: Deno.Kv } = {},
): Promise<TestGateway> {
  const config = parseConfig(testConfigYaml(upstreamUrl, options), "test.yaml");
  const env = (name: string) => (UPSTREAM_KEYS as Record<string, string>)[name];
  const store = createStore(options.kv ?? await Deno.openKv(":memory:"));
  await seedGroups(store, config.groups);
  const tokens = {} as TestGateway["tokens"];
  for (const group of ["default", "oa", "auto", "bulk"] as const) {
    tokens[group] = (await store.createToken({ group })).secret;
  }
  const logs: Record<string, unknown>[] = [];
  const app = createApp({
    config,
    table: buildRouteTable(config, env),
    store,
    fetch: globalThis.fetch,
    now: () => new Date(),
    log: (line) => logs.push(line),
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app);
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    store,
    tokens,
    logs,
    post: (path, body, headers) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": tokens.default, ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      store.close();
    },
  };
}

/** Reads a whole SSE response into events. */
export async function readSse(res: Response): Promise<SseMessage[]> {
  return new SseParser().push(await res.text());
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
