/** @module Unit tests for whether the console's browser test runs, is skipped or fails on a machine. */
import assert from "node:assert/strict";
import { browserChoice, type BrowserFacts, DEFAULT_CHROMIUM } from "../browser/_chromium.ts";

const NONE = () => false;
const AT = (where: string) => (path: string) => path === where;
const CASES: { name: string; facts: BrowserFacts; want: "run" | "skip" | "fail"; path?: string }[] = [
  { name: "runs the system's Chromium", facts: { exists: AT(DEFAULT_CHROMIUM) }, want: "run", path: DEFAULT_CHROMIUM },
  { name: "runs the named browser", facts: { named: "/opt/c", exists: AT("/opt/c") }, want: "run", path: "/opt/c" },
  { name: "runs under CI with a browser", facts: { ci: "true", exists: AT(DEFAULT_CHROMIUM) }, want: "run" },
  { name: "skips without a browser and without CI", facts: { exists: NONE }, want: "skip" },
  { name: "skips with CI empty", facts: { ci: "", exists: NONE }, want: "skip" },
  { name: "skips with CI=false", facts: { ci: "false", exists: NONE }, want: "skip" },
  { name: "skips with CI=0", facts: { ci: "0", exists: NONE }, want: "skip" },
  { name: "fails under CI=true without a browser", facts: { ci: "true", exists: NONE }, want: "fail" },
  { name: "fails under CI=1 without a browser", facts: { ci: "1", exists: NONE }, want: "fail" },
  {
    name: "fails when the named browser is missing",
    facts: { named: "/opt/c", exists: AT(DEFAULT_CHROMIUM) },
    want: "fail",
  },
  { name: "takes an empty MODELGATE_CHROMIUM as unset", facts: { named: "", exists: NONE }, want: "skip" },
];
for (const c of CASES) {
  Deno.test(`browserChoice() ${c.name}`, () => {
    const choice = browserChoice(c.facts);
    assert.equal(choice.action, c.want);
    if (choice.action === "run" && c.path) assert.equal(choice.path, c.path);
    // A skip or a failure says in one line what is missing and how to get it.
    if (choice.action !== "run") {
      assert.match(choice.reason, /^no Chromium at \S+ .*apt-get install -y chromium.*MODELGATE_CHROMIUM/);
      assert.ok(!choice.reason.includes("\n"));
    }
  });
}
