/**
 * @module Whether the browser test runs, is skipped or fails: a machine without Chromium skips it with the reason,
 * unless it is CI or the tester named a browser, where a missing one is a failure rather than a silent pass.
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
  /** Whether a file is at `path`. */
  exists(path: string): boolean;
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
  if (facts.exists(path)) return { action: "run", path };
  const missing = `no Chromium at ${path} (apt-get install -y chromium, or set MODELGATE_CHROMIUM to its path)`;
  if (isCi(facts.ci)) return { action: "fail", reason: `${missing}; with CI set the browser test fails without it` };
  if (named) return { action: "fail", reason: `${missing}: MODELGATE_CHROMIUM names a browser that is not there` };
  return { action: "skip", reason: `${missing}; with CI set it fails instead` };
}

/** The decision for this process, from its environment and file system. */
export function chromiumOnThisMachine(): BrowserChoice {
  return browserChoice({
    named: Deno.env.get("MODELGATE_CHROMIUM"),
    ci: Deno.env.get("CI"),
    exists(path) {
      try {
        return Deno.statSync(path).isFile;
      } catch {
        return false;
      }
    },
  });
}
