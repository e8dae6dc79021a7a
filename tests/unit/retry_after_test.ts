/** @module Unit tests for reading an upstream's retry headers, and for which of them a client is handed. */
import assert from "node:assert/strict";
import { relayedHeaders, retryAfterMs } from "../../src/relay/upstream_headers.ts";

const NOW = Date.parse("2026-11-22T12:00:00Z");
const CASES: { name: string; headers: Record<string, string>; want: number | undefined }[] = [
  { name: "seconds", headers: { "retry-after": "7" }, want: 7000 },
  { name: "fractional seconds", headers: { "retry-after": "0.5" }, want: 500 },
  { name: "an HTTP date", headers: { "retry-after": "Sun, 22 Nov 2026 12:00:30 GMT" }, want: 30_000 },
  { name: "a date in the past", headers: { "retry-after": "Sun, 22 Nov 2026 11:00:00 GMT" }, want: 0 },
  { name: "retry-after-ms first", headers: { "retry-after-ms": "250", "retry-after": "9" }, want: 250 },
  { name: "garbage", headers: { "retry-after": "soon" }, want: undefined },
  { name: "nothing", headers: {}, want: undefined },
  // Number("") is 0: an empty value would mean "again now, same deployment".
  { name: "an empty retry-after-ms as absent", headers: { "retry-after-ms": "" }, want: undefined },
  { name: "an empty retry-after as absent", headers: { "retry-after": "" }, want: undefined },
  { name: "a blank retry-after as absent", headers: { "retry-after": " \t" }, want: undefined },
  {
    name: "an empty retry-after-ms, then retry-after",
    headers: { "retry-after-ms": "", "retry-after": "2" },
    want: 2000,
  },
  {
    name: "a date in retry-after-ms as absent",
    headers: { "retry-after-ms": "Sun, 22 Nov 2026 12:00:30 GMT" },
    want: undefined,
  },
  { name: "garbage in retry-after-ms as absent", headers: { "retry-after-ms": "soon" }, want: undefined },
  // Date.parse reads what follows a date, and Number reads hex and exponents: neither is a retry header's form.
  {
    name: "a date followed by anything as absent",
    headers: { "retry-after": "Sun, 22 Nov 2026 12:00:30 GMT (sk-key)" },
    want: undefined,
  },
  { name: "a date in another format as absent", headers: { "retry-after": "2026-11-22T12:00:30Z" }, want: undefined },
  {
    name: "a day the calendar has not as absent",
    headers: { "retry-after": "Tue, 31 Feb 2026 12:00:30 GMT" },
    want: undefined,
  },
  { name: "hex seconds as absent", headers: { "retry-after": "0x10" }, want: undefined },
  { name: "an exponent as absent", headers: { "retry-after-ms": "1e3" }, want: undefined },
  { name: "a negative delay as absent", headers: { "retry-after": "-5" }, want: undefined },
];
for (const c of CASES) {
  Deno.test(`retryAfterMs() reads ${c.name}`, () => {
    assert.equal(retryAfterMs(new Headers(c.headers), NOW), c.want);
  });
}

const RELAYED: { name: string; headers: Record<string, string>; want: Record<string, string> }[] = [
  {
    name: "each header in its own form",
    headers: { "x-should-retry": "false", "retry-after": "Sun, 22 Nov 2026 12:00:30 GMT", "retry-after-ms": "250" },
    want: { "x-should-retry": "false", "retry-after": "Sun, 22 Nov 2026 12:00:30 GMT", "retry-after-ms": "250" },
  },
  { name: "x-should-retry only as true or false", headers: { "x-should-retry": "true sk-key" }, want: {} },
  { name: "x-should-retry in another case left out", headers: { "x-should-retry": "TRUE" }, want: {} },
  {
    name: "a date followed by a key left out",
    headers: { "retry-after": "Sun, 22 Nov 2026 12:00:30 GMT sk-key" },
    want: {},
  },
  { name: "a number followed by a key left out", headers: { "retry-after-ms": "250 sk-key" }, want: {} },
  { name: "a value that is a secret left out", headers: { "retry-after": "123456" }, want: {} },
  { name: "no other header", headers: { "request-id": "req_1", "x-ratelimit-remaining": "0" }, want: {} },
];
for (const c of RELAYED) {
  Deno.test(`relayedHeaders() hands on ${c.name}`, () => {
    assert.deepEqual(Object.fromEntries(relayedHeaders(new Headers(c.headers), ["123456"])), c.want);
  });
}
