/**
 * @module The benchmark's fixtures: the cases (what is sent direct and through the gateway), the generated
 * gateway config, and starting the fake upstream and the gateway with a fresh KV and a CLI-made token.
 */
import { EMBED_INPUTS, LARGE_MODEL, LONG_EVENTS, LONG_MODEL, PACED_MODEL } from "./fake_upstream.ts";
import type { ProcessSet, Started } from "./processes.ts";

/** Repository root, where the gateway's deno.json and main.ts live. */
export const ROOT = new URL("../", import.meta.url).pathname;

/** One request shape as the load generator sends it. */
export interface Target {
  path: string;
  body: string;
  /** Sent with the token of the group with guardrails (secrets and personal data) instead of the bench group's. */
  guarded?: boolean;
}

/** A benchmark case: the same exchange sent direct to the upstream and through the gateway. */
export interface BenchCase {
  name: string;
  stream: boolean;
  direct: Target;
  gateway: Target;
  /** Events per stream, for cases judged per event. */
  events?: number;
  /**
   * The only concurrency it is measured at (a long stream at every one would take too long, and many of them at
   * once would end few streams within a run).
   */
  concurrency?: number;
}

const PROMPT = [{ role: "user", content: "Say something short about foxes." }];

function messagesBody(model: string, stream: boolean, messages: unknown = PROMPT): string {
  return JSON.stringify({ model, max_tokens: 64, messages, ...(stream ? { stream: true } : {}) });
}

/**
 * A coding agent's turn, as the guardrails cases send it: about 8 KB of a repository's source and config read into the
 * conversation, with one key and one address in it, so the rules have work to do.
 */
export const CODE_TURN = (() => {
  const source = [
    "export async function handler(req: Request): Promise<Response> {",
    "  const url = new URL(req.url);",
    '  if (url.pathname === "/health") return new Response("ok", { status: 200 });',
    "  const body = await req.json();",
    "  return Response.json({ id: crypto.randomUUID(), created_at: 1700000000000, items: body.items ?? [] });",
    "}",
  ].join("\n");
  const env = "AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH\nCONTACT=jane.doe@acme-corp.io\nLOG_LEVEL=debug\n";
  const text = `Here is the repository:\n${Array.from({ length: 20 }, () => source).join("\n\n")}\n.env:\n${env}`;
  return [{ role: "user", content: text }];
})();

/** A Responses request as Codex makes one (`store: false`, nothing kept by the gateway or the provider). */
function responsesBody(model: string, stream: boolean): string {
  return JSON.stringify({
    model,
    instructions: "You are a coding agent.",
    input: [{ type: "message", role: "user", content: [{ type: "input_text", text: PROMPT[0].content }] }],
    max_output_tokens: 64,
    store: false,
    ...(stream ? { stream: true } : {}),
  });
}

/** An embeddings request as the OpenAI SDK sends one by default (base64), of {@linkcode EMBED_INPUTS} short texts. */
function embeddingsBody(model: string): string {
  const input = Array.from({ length: EMBED_INPUTS }, (_, i) => `Paragraph ${i} of a document about foxes and dogs.`);
  return JSON.stringify({ model, input, encoding_format: "base64" });
}

function chatBody(model: string, stream: boolean): string {
  return JSON.stringify({
    model,
    max_tokens: 64,
    messages: PROMPT,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

/**
 * The cases; "translated" sends a Messages request to a model whose upstream speaks OpenAI Chat Completions,
 * "responses" a Responses request to an `openai-responses` upstream (a passthrough), "translated_responses" a Messages
 * request to that upstream, and "long_stream" asks for a long answer (2,000 events, sent as fast as the upstream can).
 */
export const CASES: readonly BenchCase[] = [
  {
    name: "messages",
    stream: false,
    direct: { path: "/v1/messages", body: messagesBody("bench-claude", false) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-claude", false) },
  },
  {
    name: "messages_stream",
    stream: true,
    direct: { path: "/v1/messages", body: messagesBody("bench-claude", true) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-claude", true) },
  },
  {
    name: "translated",
    stream: false,
    direct: { path: "/v1/chat/completions", body: chatBody("bench-gpt", false) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-gpt", false) },
  },
  {
    name: "translated_stream",
    stream: true,
    direct: { path: "/v1/chat/completions", body: chatBody("bench-gpt", true) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-gpt", true) },
  },
  {
    name: "responses",
    stream: false,
    direct: { path: "/v1/responses", body: responsesBody("bench-codex", false) },
    gateway: { path: "/v1/responses", body: responsesBody("bench-codex", false) },
    concurrency: 64,
  },
  {
    name: "responses_stream",
    stream: true,
    direct: { path: "/v1/responses", body: responsesBody("bench-codex", true) },
    gateway: { path: "/v1/responses", body: responsesBody("bench-codex", true) },
    concurrency: 64,
  },
  {
    name: "translated_responses",
    stream: false,
    direct: { path: "/v1/responses", body: responsesBody("bench-codex", false) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-codex", false) },
    concurrency: 64,
  },
  {
    name: "translated_responses_stream",
    stream: true,
    direct: { path: "/v1/responses", body: responsesBody("bench-codex", true) },
    gateway: { path: "/v1/messages", body: messagesBody("bench-codex", true) },
    concurrency: 64,
  },
  ...[false, true].flatMap((guarded) =>
    [false, true].map((stream): BenchCase => ({
      name: `guardrails_${guarded ? "on" : "off"}${stream ? "_stream" : ""}`,
      stream,
      direct: { path: "/v1/messages", body: messagesBody("bench-claude", stream, CODE_TURN) },
      gateway: { path: "/v1/messages", body: messagesBody("bench-claude", stream, CODE_TURN), guarded },
      // One concurrency: the figure judged is CPU per request, which concurrency hardly moves.
      concurrency: 16,
    }))
  ),
  {
    name: "embeddings",
    stream: false,
    direct: { path: "/v1/embeddings", body: embeddingsBody("text-embedding-3-small") },
    gateway: { path: "/v1/embeddings", body: embeddingsBody("bench-embed") },
    concurrency: 64,
  },
  {
    name: "long_stream",
    stream: true,
    direct: { path: "/v1/messages", body: messagesBody(LONG_MODEL, true) },
    gateway: { path: "/v1/messages", body: messagesBody(LONG_MODEL, true) },
    events: LONG_EVENTS,
    concurrency: 4,
  },
];

/** Events per stream of the cases judged per event. */
export const EVENTS_PER_STREAM: Record<string, number> = Object.fromEntries(
  CASES.flatMap((c) => c.events ? [[c.name, c.events]] : []),
);

/** The many-open-streams case: a Messages stream the fake upstream paces like a model. */
export const PACED_TARGET: Target = { path: "/v1/messages", body: messagesBody(PACED_MODEL, true) };

/** The gateway config: both upstream protocols on the fake upstream, one group with a model of each. */
export function gatewayConfig(upstreamPort: number, kvPath: string, mcpUrl?: string): string {
  const base = `http://127.0.0.1:${upstreamPort}/v1`;
  // The MCP bench's server, when there is one, and the bench group's grant of it.
  const mcp = mcpUrl ? `mcp_servers:\n  - { name: bench, url: "${mcpUrl}" }\n` : "";
  return `${mcp}listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(kvPath)}
upstreams:
  - name: bench-anthropic
    protocol: anthropic
    base_url: "${base}"
    api_key_env: BENCH_UPSTREAM_KEY
    models: [bench-claude, ${LONG_MODEL}, ${PACED_MODEL}, ${LARGE_MODEL}]
  - name: bench-openai
    protocol: openai
    base_url: "${base}"
    api_key_env: BENCH_UPSTREAM_KEY
    models: [bench-gpt, { id: bench-embed, upstream_id: text-embedding-3-small, kind: embedding }]
  - name: bench-openai-responses
    protocol: openai-responses
    base_url: "${base}"
    api_key_env: BENCH_UPSTREAM_KEY
    models: [bench-codex]
guardrails:
  - { name: secrets, detect: [secrets], scope: [input, output], action: mask, restore: true }
  - { name: pii, detect: [pii], scope: [input, output], action: mask }
groups:
  - name: bench
    listing: anthropic
    models: [bench-claude, bench-gpt, bench-codex, bench-embed, ${LONG_MODEL}, ${PACED_MODEL}, ${LARGE_MODEL}]
${
    mcpUrl
      ? '    mcp: { bench: "*" }\n'
      : ""
  }  - { name: bench-guarded, listing: anthropic, models: [bench-claude], guardrails: [secrets, pii] }
`;
}

/** A running process that serves HTTP on loopback. */
export interface Service {
  process: Started;
  url: string;
}

/** Starts the fake upstream on core 0 and waits for its port. */
export async function startUpstream(processes: ProcessSet): Promise<Service> {
  const process = processes.start(
    "fake upstream",
    Deno.execPath(),
    ["run", "--allow-net=127.0.0.1", `${ROOT}bench/fake_upstream.ts`],
    { core: 0 },
  );
  const [, port] = await process.waitFor(/"listening":(\d+)/, 30_000);
  return { process, url: `http://127.0.0.1:${port}` };
}

/**
 * The V8 flags of `deno task start`, read from deno.json, so the bench measures the gateway as it is run (and the
 * floor proxy under the same runtime settings).
 */
export async function startV8Flags(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  return v8FlagsOf(String(config.tasks?.start ?? ""));
}

/** The `--v8-flags=...` arguments of a task's command line. */
export function v8FlagsOf(task: string): string[] {
  return task.split(/\s+/).filter((arg) => arg.startsWith("--v8-flags="));
}

/**
 * Starts the floor proxy (a bare fetch relay, see floor_proxy.ts) on the gateway's core and waits for its port; `env`
 * is its whole environment (none by default); `jsRelay` starts its variant that passes each chunk through JS.
 */
export async function startFloor(
  processes: ProcessSet,
  upstreamUrl: string,
  env?: Record<string, string>,
  jsRelay = false,
): Promise<Service> {
  const process = processes.start(
    jsRelay ? "JS relay floor" : "floor proxy",
    Deno.execPath(),
    [
      "run",
      ...await startV8Flags(),
      "--allow-net=127.0.0.1",
      `${ROOT}bench/floor_proxy.ts`,
      upstreamUrl,
      ...(jsRelay ? ["--js-relay"] : []),
    ],
    { core: 1, env },
  );
  const [, port] = await process.waitFor(/"listening":(\d+)/, 30_000);
  return { process, url: `http://127.0.0.1:${port}` };
}

/** The gateway's environment: its KV and the (fake) upstream key. */
function gatewayEnv(dir: string): Record<string, string> {
  return { MODELGATE_KV: `${dir}/bench.kv`, BENCH_UPSTREAM_KEY: "bench-upstream-key", NO_COLOR: "1" };
}

/**
 * Writes the config into `dir` (with the MCP bench's server, when given) and creates a token in group "bench", and one
 * in "bench-guarded" for the guardrails cases.
 */
export async function prepareGateway(
  dir: string,
  upstreamPort: number,
  mcpUrl?: string,
): Promise<{ config: string; token: string; guardedToken: string }> {
  const config = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(config, gatewayConfig(upstreamPort, `${dir}/bench.kv`, mcpUrl));
  const create = async (group: string) => {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...gatewayPermissions(dir), "main.ts", "token", "create", "--group", group, "--config", config],
      cwd: ROOT,
      env: gatewayEnv(dir),
      stdin: "null",
    }).output();
    const token = new TextDecoder().decode(output.stdout).trim();
    if (!output.success || !token) {
      throw new Error(`Cannot create a bench token: ${new TextDecoder().decode(output.stderr).trim()}`);
    }
    return token;
  };
  return { config, token: await create("bench"), guardedToken: await create("bench-guarded") };
}

/** The token a target is sent with. */
export function tokenFor(target: Target, tokens: { token: string; guardedToken?: string }): string {
  return target.guarded && tokens.guardedToken ? tokens.guardedToken : tokens.token;
}

function gatewayPermissions(dir: string): string[] {
  return ["--allow-net=127.0.0.1", "--allow-env", "--allow-read", `--allow-write=${dir}`];
}

/**
 * Starts `main.ts serve` on core 1 (under --cpu-prof when a directory is given) and waits for its port; `root` runs
 * another checkout's main.ts, `env` adds to the gateway's environment.
 */
export async function startGateway(
  processes: ProcessSet,
  options: { dir: string; config: string; profileDir?: string; root?: string; env?: Record<string, string> },
): Promise<Service> {
  const profile = options.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${options.profileDir}`] : [];
  const process = processes.start(
    "gateway",
    Deno.execPath(),
    [
      "run",
      ...await startV8Flags(),
      ...gatewayPermissions(options.dir),
      ...profile,
      // Deno finds deno.json from the working directory; another checkout's main.ts needs its own.
      ...(options.root ? ["--config", `${options.root}deno.json`] : []),
      `${options.root ?? ROOT}main.ts`,
      "serve",
      "--config",
      options.config,
    ],
    { core: 1, env: { ...gatewayEnv(options.dir), ...options.env } },
  );
  const [, url] = await process.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
  return { process, url };
}

/** Headers every request carries; the fake upstream ignores them. */
export function requestHeaders(token: string): Record<string, string> {
  return { "content-type": "application/json", "x-api-key": token, "anthropic-version": "2023-06-01" };
}

/**
 * Sends one request of a case and checks the answer is a success of the right kind; returns why not, or
 * undefined when the case works.
 */
export async function probe(url: string, target: Target, stream: boolean, token: string): Promise<string | undefined> {
  const res = await fetch(url + target.path, { method: "POST", headers: requestHeaders(token), body: target.body });
  const text = await res.text();
  if (res.status !== 200) {
    let message = text.slice(0, 200);
    try {
      message = JSON.parse(text).error?.message ?? message;
    } catch {
      // Not JSON: keep the raw start of the body.
    }
    return `HTTP ${res.status}: ${message}`;
  }
  const isStream = (res.headers.get("content-type") ?? "").includes("text/event-stream");
  if (isStream !== stream) return `expected ${stream ? "a stream" : "JSON"}, got ${res.headers.get("content-type")}`;
  const complete = stream
    ? /message_stop|\[DONE\]|response\.completed/.test(text)
    : /"(type":"message|object":"chat\.completion|object":"response|object":"list)"/.test(text);
  return complete ? undefined : `unexpected body: ${text.slice(0, 200)}`;
}

/** Time to first body byte of `samples` sequential streamed requests, in ms, after a few unmeasured ones. */
export async function sampleTtfb(url: string, target: Target, token: string, samples: number): Promise<number[]> {
  const times: number[] = [];
  const headers = requestHeaders(token);
  for (let i = -Math.min(20, samples); i < samples; i++) {
    const start = performance.now();
    const res = await fetch(url + target.path, { method: "POST", headers, body: target.body });
    const reader = res.body!.getReader();
    const first = await reader.read();
    const elapsed = performance.now() - start;
    while (!(await reader.read()).done);
    if (res.status !== 200 || first.done) throw new Error(`TTFB sample failed: HTTP ${res.status}`);
    if (i >= 0) times.push(elapsed);
  }
  return times;
}
