/** @module Log levels and formats, the access line's fields, and the runtime settings read from the environment. */
import assert from "node:assert/strict";
import type { Exchange } from "../../src/core/exchange.ts";
import { requestIdFrom } from "../../src/core/http.ts";
import { batchedWriter, createLogger, type LogSettings, redactingLog, requestLine } from "../../src/observe/log.ts";
import { defaultArgs, kvLocation, logSettings } from "../../src/serve/runtime.ts";

const NOW = new Date("2026-11-22T20:31:05.123Z");

function capture(settings: LogSettings): { lines: string[]; log: (line: Record<string, unknown>) => void } {
  const lines: string[] = [];
  return { lines, log: createLogger(settings, { write: (text) => lines.push(text), now: () => NOW }) };
}

const MODELS = new Set(["claude-test"]);

const EXCHANGE: Exchange = {
  request_id: "req_abc",
  started_at: NOW.getTime(),
  method: "POST",
  route: "/v1/messages",
  protocol: "anthropic",
  token_id: "tok_1",
  group: "default",
  model: "claude-test",
  stream: true,
  upstream: "second",
  affinity: "moved",
  attempts: [{ upstream: "first", outcome: "overloaded", status: 529 }, { upstream: "second", outcome: "ok" }],
  status: 200,
  ttfb_ms: 40,
  duration_ms: 900,
  usage: { input_tokens: 5, output_tokens: 7, cache_read_input_tokens: 1, cache_creation_input_tokens: 0 },
  usage_complete: true,
};

Deno.test("createLogger() writes JSON with time and level first", () => {
  const { lines, log } = capture({ level: "info", format: "json" });
  log({ event: "note", detail: "x" });
  assert.deepEqual(JSON.parse(lines[0]), { time: NOW.toISOString(), level: "info", event: "note", detail: "x" });
  assert.ok(lines[0].startsWith('{"time":'));
});

const LEVEL_CASES = [
  { name: "drops info at warn", level: "warn", line: { event: "note" }, written: false },
  { name: "keeps upstream_error (warn) at warn", level: "warn", line: { event: "upstream_error" }, written: true },
  { name: "keeps internal_error (error) at error", level: "error", line: { event: "internal_error" }, written: true },
  { name: "drops upstream_error at error", level: "error", line: { event: "upstream_error" }, written: false },
  { name: "honours an explicit level", level: "info", line: { event: "x", level: "debug" }, written: false },
  { name: "keeps debug at debug", level: "debug", line: { event: "x", level: "debug" }, written: true },
] as const;
for (const c of LEVEL_CASES) {
  Deno.test(`createLogger() ${c.name}`, () => {
    const { lines, log } = capture({ level: c.level, format: "json" });
    log({ ...c.line });
    assert.equal(lines.length, c.written ? 1 : 0);
  });
}

Deno.test("createLogger() pretty format is one readable line with the request's essentials", () => {
  const { lines, log } = capture({ level: "info", format: "pretty" });
  log(requestLine(EXCHANGE, MODELS));
  assert.equal(lines.length, 1);
  assert.ok(!lines[0].includes("\n"));
  assert.equal(
    lines[0],
    "20:31:05.123 INFO  POST /v1/messages 200 900ms ttfb=40ms model=claude-test via=second pin=moved in=5 out=7 " +
      "stream=yes token=tok_1 group=default attempts=first:overloaded,second:ok [req_abc]",
  );
  assert.ok(lines[0].endsWith("[req_abc]"));
});

Deno.test("createLogger() pretty format shows other events as key=value pairs", () => {
  const { lines, log } = capture({ level: "info", format: "pretty" });
  log({ event: "upstream_error", request_id: "req_1", upstream: "up", error: "TypeError" });
  assert.equal(lines[0], "20:31:05.123 WARN  upstream_error upstream=up error=TypeError [req_1]");
});

Deno.test("requestLine() carries every field an operator asks for", () => {
  const line = requestLine(EXCHANGE, MODELS);
  assert.deepEqual(line, {
    level: "info",
    event: "request",
    request_id: "req_abc",
    method: "POST",
    route: "/v1/messages",
    protocol: "anthropic",
    status: 200,
    duration_ms: 900,
    ttfb_ms: 40,
    token_id: "tok_1",
    group: "default",
    model: "claude-test",
    stream: true,
    transport: undefined,
    upstream: "second",
    affinity: "moved",
    compaction: undefined,
    attempts: [
      { upstream: "first", outcome: "overloaded", status: 529 },
      { upstream: "second", outcome: "ok", status: undefined },
    ],
    input_tokens: 5,
    output_tokens: 7,
    cache_read_input_tokens: 1,
    cache_creation_input_tokens: 0,
    reasoning_output_tokens: undefined,
    usage_complete: true,
    error: undefined,
  });
});

Deno.test("requestLine() of an embeddings request carries its counts, and no text", () => {
  const line = requestLine(
    { ...EXCHANGE, route: "/v1/embeddings", embeddings: { inputs: 16, dimensions: 512 } },
    MODELS,
  );
  assert.deepEqual(line.embeddings, { inputs: 16, dimensions: 512 });
  assert.equal(requestLine(EXCHANGE, MODELS).embeddings, undefined);
});

Deno.test("requestLine() logs a model id outside the config as other, since it is client input", () => {
  assert.equal(requestLine({ ...EXCHANGE, model: "sk-pasted-secret" }, MODELS).model, "other");
  assert.equal(requestLine({ ...EXCHANGE, model: undefined }, MODELS).model, undefined);
});

Deno.test("requestLine() is a warning for a 5xx and for a stream that failed after its 200", () => {
  assert.equal(requestLine({ ...EXCHANGE, status: 502, error: "upstream" }, MODELS).level, "warn");
  assert.equal(requestLine({ ...EXCHANGE, error: "timeout" }, MODELS).level, "warn");
  assert.equal(requestLine({ ...EXCHANGE, status: 404, error: "not_found" }, MODELS).level, "info");
});

const REQUEST_IDS = [
  { name: "keeps a sane id", sent: "client-id_1.2:3", kept: true },
  { name: "replaces an id with spaces", sent: "a b", kept: false },
  { name: "replaces an over-long id", sent: "x".repeat(129), kept: false },
  { name: "replaces an empty id", sent: "", kept: false },
  { name: "replaces an id with a quote", sent: 'a"b', kept: false },
  { name: "replaces an id shaped like a token secret", sent: "sk-abc_DEF-123", kept: false },
];
for (const c of REQUEST_IDS) {
  Deno.test(`requestIdFrom() ${c.name}`, () => {
    const id = requestIdFrom(new Headers({ "x-request-id": c.sent }));
    if (c.kept) assert.equal(id, c.sent);
    else assert.match(id, /^req_[0-9a-f]{24}$/);
  });
}

const env = (values: Record<string, string>) => (name: string) => values[name];

const KV_CASES = [
  { name: "uses kv_path", kvPath: "data/x.kv", values: {}, want: "data/x.kv" },
  { name: "lets MODELGATE_KV win", kvPath: "data/x.kv", values: { MODELGATE_KV: "/tmp/s.kv" }, want: "/tmp/s.kv" },
  { name: "opens managed KV on Deploy", kvPath: "data/x.kv", values: { DENO_DEPLOYMENT_ID: "d1" }, want: undefined },
  { name: 'opens managed KV for "managed"', kvPath: "managed", values: {}, want: undefined },
  {
    name: "lets MODELGATE_KV win on Deploy too",
    kvPath: "managed",
    values: { DENO_DEPLOYMENT_ID: "d1", MODELGATE_KV: "https://kv.example/x" },
    want: "https://kv.example/x",
  },
];
for (const c of KV_CASES) {
  Deno.test(`kvLocation() ${c.name}`, () => {
    assert.equal(kvLocation(c.kvPath, env(c.values as Record<string, string>)), c.want);
  });
}

Deno.test("defaultArgs() means serve on Deploy only when no arguments are given", () => {
  assert.deepEqual(defaultArgs([], env({ DENO_DEPLOYMENT_ID: "d1" })), ["serve"]);
  assert.deepEqual(defaultArgs([], env({})), []);
  assert.deepEqual(defaultArgs(["token", "list"], env({ DENO_DEPLOYMENT_ID: "d1" })), ["token", "list"]);
});

Deno.test("logSettings() takes valid environment overrides and ignores invalid ones", () => {
  const base: LogSettings = { level: "info", format: "json" };
  assert.deepEqual(logSettings(base, env({ MODELGATE_LOG_FORMAT: "pretty" })), { level: "info", format: "pretty" });
  assert.deepEqual(logSettings(base, env({ MODELGATE_LOG_LEVEL: "warn" })), { level: "warn", format: "json" });
  assert.deepEqual(logSettings(base, env({ MODELGATE_LOG_LEVEL: "loud", MODELGATE_LOG_FORMAT: "xml" })), base);
});

Deno.test("batchedWriter() writes the lines of one turn at once, in order, and flushes on demand", async () => {
  const writes: string[] = [];
  const lines = batchedWriter((text) => writes.push(text));
  lines.write("a");
  lines.write("b");
  assert.deepEqual(writes, [], "nothing is written within the turn");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(writes, ["a\nb"]);
  lines.write("c");
  lines.flush();
  assert.deepEqual(writes, ["a\nb", "c"]);
  lines.flush();
  assert.equal(writes.length, 2, "an empty flush writes nothing");
});

Deno.test("redactingLog() takes every upstream secret out of every value of a line, as the secrets change", () => {
  const seen: Record<string, unknown>[] = [];
  const secrets = ["AIzaSyD-9tSrke72PouQMnMX", "ya29.first-token"];
  const log = redactingLog((line) => seen.push(line), () => secrets);
  const clean = { event: "request", attempts: [{ upstream: "gem", request_id: "req_1" }] };
  log(clean);
  assert.equal(seen[0], clean, "a line without a secret is passed as it is");
  log({
    event: "internal_error",
    error: 'SyntaxError: Unexpected token, "\\u0041IzaSyD-9tSrke72PouQMnMX" is not valid JSON',
    attempts: [{ upstream: "gem", request_id: "AIzaSyD-9tSrke72PouQMnMX" }],
    [secrets[1]]: 1,
  });
  assert.deepEqual(seen[1], {
    event: "internal_error",
    error: 'SyntaxError: Unexpected token, "[redacted]" is not valid JSON',
    attempts: [{ upstream: "gem", request_id: "[redacted]" }],
    "[redacted]": 1,
  });
  secrets[1] = "ya29.second-token";
  log({ event: "token_refused", note: "ya29.second-token" });
  assert.deepEqual(seen[2], { event: "token_refused", note: "[redacted]" });
});
