/** @module The wrk driver: its Lua script, its arguments and the summary it prints. */
import assert from "node:assert/strict";
import { parseWrkOutput, wrkArgs, wrkScript } from "../../bench/wrk.ts";

const SUMMARY = 'BENCH_RESULT {"requests":20000,"duration_us":2000000,' +
  '"errors":{"connect":0,"read":1,"write":0,"status":3,"timeout":0},' +
  '"latency_us":{"p50":250.0,"p90":400.0,"p99":1200.5,"max":9000.0,"mean":300.25}}';

const PARSED = {
  requests: 20000,
  durationUs: 2_000_000,
  rps: 10_000,
  errors: { connect: 0, read: 1, write: 0, status: 3, timeout: 0 },
  latencyUs: { p50: 250, p90: 400, p99: 1200.5, max: 9000, mean: 300.25 },
};

const PARSE_CASES = [
  {
    name: "reads the summary line among wrk's own output",
    input:
      `Running 2s test @ http://127.0.0.1:1/v1/messages\n  1 threads and 16 connections\n${SUMMARY}\nRequests/sec: 9999\n`,
    want: PARSED,
  },
  {
    name: "gives zero requests/s for a zero duration",
    input: SUMMARY.replace('"duration_us":2000000', '"duration_us":0'),
    want: { ...PARSED, durationUs: 0, rps: 0 },
  },
];

for (const c of PARSE_CASES) {
  Deno.test(`parseWrkOutput() ${c.name}`, () => {
    assert.deepEqual(parseWrkOutput(c.input), c.want);
  });
}

Deno.test("parseWrkOutput() throws naming the output when wrk printed no summary", () => {
  assert.throws(
    () => parseWrkOutput("unable to connect to 127.0.0.1:1 Connection refused"),
    /no summary line.*refused/,
  );
});

Deno.test("wrkScript() quotes header names so that Lua does not read `[[[` as a nested long string", () => {
  const script = wrkScript({ url: "http://x", headers: { "x-api-key": "sk-1" }, body: "{}" });
  assert.match(script, /wrk\.headers\[ \[\[x-api-key\]\] \] = \[\[sk-1\]\]/);
});

Deno.test("wrkScript() picks a long-string level the body cannot close", () => {
  const script = wrkScript({ url: "http://x", headers: {}, body: '{"a":[["]]"]]}' });
  assert.match(script, /wrk\.body = \[=\[\{"a":\[\["\]\]"\]\]\}\]=\]/);
});

Deno.test("wrkScript() alternates two pre-formatted bodies only when a second body is given", () => {
  assert.doesNotMatch(wrkScript({ url: "http://x", headers: {}, body: "{}" }), /request = function/);
  const mixed = wrkScript({ url: "http://x", headers: {}, body: "{}", altBody: '{"stream":true}' });
  assert.match(mixed, /bodies\[1\] = wrk\.format\(nil, nil, nil, \[\[\{"stream":true\}\]\]\)/);
  assert.match(mixed, /return bodies\[sent % 2\]/);
});

Deno.test("wrkArgs() uses one thread and whole seconds, at least one", () => {
  assert.deepEqual(wrkArgs({ connections: 64, seconds: 0.4, script: "s.lua", url: "http://h/p" }), [
    "-t1",
    "-c64",
    "-d1s",
    "--timeout",
    "10s",
    "-s",
    "s.lua",
    "http://h/p",
  ]);
});
