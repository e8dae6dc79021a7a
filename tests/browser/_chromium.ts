/**
 * @module Whether the browser test runs, is skipped or fails: a machine without a Chromium that runs (none at its
 * path, or only a placeholder there, such as a distribution's stub that points at another package) skips it with the
 * reason, unless it is CI or the tester named a browser, where a missing one is a failure rather than a silent pass.
 */

/** Flags that keep Chromium off the network (the machines running this have none) and quick to start. */
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The default place of Chromium from the system's packages (`apt-get install -y chromium`). */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

/** What the decision looks at. */
export interface BrowserFacts {
  /** `MODELGATE_CHROMIUM`, when set. */
  named?: string;
  /** `CI`, when set. */
  ci?: string;
  /** What keeps `path` from running as a browser: nothing there, or a `--version` that fails; undefined when it runs. */
  problem(path: string): string | undefined;
}

/** Run with the browser at `path`; skip (Deno's `ignore`) for `reason`; or fail with `reason`. */
export type BrowserChoice =
  | { action: "run"; path: string }
  | { action: "skip"; reason: string }
  | { action: "fail"; reason: string };

/** True when `CI` says this is a CI run: set to anything but empty, `0` or `false`. */
function isCi(value: string | undefined): boolean {
  return value !== undefined && !["", "0", "false"].includes(value.trim().toLowerCase());
}

/** Decides what the browser test does on this machine. */
export function browserChoice(facts: BrowserFacts): BrowserChoice {
  const named = facts.named !== undefined && facts.named !== "" ? facts.named : undefined;
  const path = named ?? DEFAULT_CHROMIUM;
  const problem = facts.problem(path);
  if (problem === undefined) return { action: "run", path };
  const missing =
    `no working Chromium at ${path} (${problem}; apt-get install -y chromium, or set MODELGATE_CHROMIUM ` +
    "to its path)";
  if (isCi(facts.ci)) return { action: "fail", reason: `${missing}; with CI set the browser test fails without it` };
  if (named) return { action: "fail", reason: `${missing}: MODELGATE_CHROMIUM names a browser that is not there` };
  return { action: "skip", reason: `${missing}; with CI set it fails instead` };
}

/** The decision for this process, from its environment and what runs at the browser's path. */
export function chromiumOnThisMachine(): BrowserChoice {
  return browserChoice({
    named: Deno.env.get("MODELGATE_CHROMIUM"),
    ci: Deno.env.get("CI"),
    problem: versionProblem,
  });
}

/** Runs `path --version`: a browser prints its name and version and exits 0; anything else is a placeholder. */
function versionProblem(path: string): string | undefined {
  try {
    if (!Deno.statSync(path).isFile) return "not a file";
  } catch {
    return "nothing there";
  }
  try {
    const run = new Deno.Command(path, { args: ["--version"], stdin: "null", stdout: "piped", stderr: "piped" })
      .outputSync();
    const said = new TextDecoder().decode(run.success ? run.stdout : run.stderr).trim().split("\n")[0].slice(0, 120);
    if (run.success && /chrom/i.test(said)) return undefined;
    return `--version ${run.success ? "names no browser" : `exits ${run.code}`}: ${JSON.stringify(said)}`;
  } catch (err) {
    return `it does not run: ${(err as Error).message.split("\n")[0]}`;
  }
}
