/** @module Unit tests for whether the console's browser test runs, is skipped or fails on a machine. */
import assert from "node:assert/strict";
import { browserChoice, type BrowserFacts, DEFAULT_CHROMIUM } from "../browser/_chromium.ts";

const NONE = () => "nothing there";
const AT = (where: string) => (path: string) => path === where ? undefined : "nothing there";
/** A file at the default path whose --version fails, as a distribution's stub pointing at another package does. */
const PLACEHOLDER = (path: string) => path === DEFAULT_CHROMIUM ? '--version exits 1: "install the chromium snap"' : "";
const CASES: { name: string; facts: BrowserFacts; want: "run" | "skip" | "fail"; path?: string }[] = [
  { name: "runs the system's Chromium", facts: { problem: AT(DEFAULT_CHROMIUM) }, want: "run", path: DEFAULT_CHROMIUM },
  { name: "runs the named browser", facts: { named: "/opt/c", problem: AT("/opt/c") }, want: "run", path: "/opt/c" },
  { name: "runs under CI with a browser", facts: { ci: "true", problem: AT(DEFAULT_CHROMIUM) }, want: "run" },
  { name: "skips without a browser and without CI", facts: { problem: NONE }, want: "skip" },
  { name: "skips a placeholder at the path that does not run", facts: { problem: PLACEHOLDER }, want: "skip" },
  { name: "skips with CI empty", facts: { ci: "", problem: NONE }, want: "skip" },
  { name: "skips with CI=false", facts: { ci: "false", problem: NONE }, want: "skip" },
  { name: "skips with CI=0", facts: { ci: "0", problem: NONE }, want: "skip" },
  { name: "fails under CI=true without a browser", facts: { ci: "true", problem: NONE }, want: "fail" },
  { name: "fails under CI=true with a placeholder", facts: { ci: "true", problem: PLACEHOLDER }, want: "fail" },
  { name: "fails under CI=1 without a browser", facts: { ci: "1", problem: NONE }, want: "fail" },
  {
    name: "fails when the named browser is missing",
    facts: { named: "/opt/c", problem: AT(DEFAULT_CHROMIUM) },
    want: "fail",
  },
  { name: "takes an empty MODELGATE_CHROMIUM as unset", facts: { named: "", problem: NONE }, want: "skip" },
];
for (const c of CASES) {
  Deno.test(`browserChoice() ${c.name}`, () => {
    const choice = browserChoice(c.facts);
    assert.equal(choice.action, c.want);
    if (choice.action === "run" && c.path) assert.equal(choice.path, c.path);
    // A skip or a failure says in one line what is missing, why, and how to get it.
    if (choice.action !== "run") {
      assert.match(choice.reason, /^no working Chromium at \S+ \(.+; apt-get install -y chromium.*MODELGATE_CHROMIUM/);
      assert.ok(!choice.reason.includes("\n"));
    }
  });
}

Deno.test("chromiumOnThisMachine() runs the browser's --version: a placeholder script or a file that cannot run is no Chromium", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-chromium-" });
  try {
    const stub = `${dir}/chromium`;
    await Deno.writeTextFile(stub, "#!/bin/sh\necho 'chromium: install the chromium package' >&2\nexit 1\n");
    await Deno.chmod(stub, 0o755);
    await Deno.writeTextFile(`${dir}/empty`, "");
    const script = `import { chromiumOnThisMachine } from "${new URL("../browser/_chromium.ts", import.meta.url)}";
console.log(JSON.stringify(chromiumOnThisMachine()));`;
    for (
      const [named, why] of [[stub, /--version exits 1: .*install the chromium package/], [
        `${dir}/empty`,
        /does not run/,
      ]]
    ) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["eval", script],
        env: { MODELGATE_CHROMIUM: named as string, CI: "" },
        stdout: "piped",
      }).output();
      const choice = JSON.parse(new TextDecoder().decode(out.stdout));
      // A named browser that does not run fails the browser tests, with the reason: the tester asked for it.
      assert.equal(choice.action, "fail");
      assert.match(choice.reason, why as RegExp);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
