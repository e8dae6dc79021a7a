/** @module Unit tests for reading an upstream's retry-after. */
import assert from "node:assert/strict";
import { retryAfterMs } from "../../src/relay/answer.ts";

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
];
for (const c of CASES) {
  Deno.test(`retryAfterMs() reads ${c.name}`, () => {
    assert.equal(retryAfterMs(new Headers(c.headers), NOW), c.want);
  });
}
