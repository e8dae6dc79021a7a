/** @module The CPU profile summary: self time per function of src/, busy samples only. */
import assert from "node:assert/strict";
import { type CpuProfile, summarizeProfile } from "../../bench/profile_summary.ts";

const ROOT = "/repo/";

function frame(functionName: string, url = "", lineNumber = 0) {
  return { functionName, url, lineNumber, columnNumber: 0 };
}

// root -> handle (src/app.ts:10) -> authenticate (src/auth.ts:20, recursive once) -> digest (native)
//                                -> fetch (deno internals)
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame("(root)"), children: [2, 7] },
    { id: 2, callFrame: frame("handle", `file://${ROOT}src/app.ts`, 9), children: [3, 5] },
    { id: 3, callFrame: frame("authenticate", `file://${ROOT}src/auth.ts`, 19), children: [4] },
    { id: 4, callFrame: frame("authenticate", `file://${ROOT}src/auth.ts`, 19), children: [6] },
    { id: 5, callFrame: frame("fetch", "ext:deno_fetch/26_fetch.js", 1) },
    { id: 6, callFrame: frame("digest") },
    { id: 7, callFrame: frame("(idle)") },
  ],
  // 10 samples over 10 ms: 4 idle, 3 in digest (under the recursive authenticate), 2 in fetch, 1 in handle.
  samples: [7, 7, 7, 7, 6, 6, 6, 5, 5, 2],
  startTime: 0,
  endTime: 10_000,
};

Deno.test("summarizeProfile() ranks self time over busy samples and leaves idle out", () => {
  const summary = summarizeProfile(PROFILE, ROOT);
  assert.equal(summary.totalMs, 10);
  assert.equal(summary.idleMs, 4);
  assert.deepEqual(summary.self, [
    { where: "digest", ms: 3, pct: 50 },
    { where: "fetch (ext:deno_fetch/26_fetch.js:2)", ms: 2, pct: 33.3 },
    { where: "handle (src/app.ts:10)", ms: 1, pct: 16.7 },
  ]);
});

Deno.test("summarizeProfile() counts a recursive own function once per sample and skips code outside src/", () => {
  const { inclusive } = summarizeProfile(PROFILE, ROOT);
  assert.deepEqual(inclusive, [
    { where: "handle (src/app.ts:10)", ms: 6, pct: 100 },
    { where: "authenticate (src/auth.ts:20)", ms: 3, pct: 50 },
  ]);
});

Deno.test("summarizeProfile() keeps only the top entries asked for", () => {
  assert.equal(summarizeProfile(PROFILE, ROOT, 1).self.length, 1);
});
