/**
 * @module Summarizes V8 CPU profiles (`deno run --cpu-prof`): where the time went by function, self and
 * inclusive, with the gateway's own code picked out. `deno task bench:profile DIR` prints it.
 */

/** The parts of a `.cpuprofile` this reads. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }[];
  samples: number[];
  startTime: number;
  endTime: number;
}

/** One function's share of the samples. */
export interface HotSpot {
  /** `name (file:line)`, line 1-based. */
  where: string;
  ms: number;
  /** Percent of the busy (non-idle) time. */
  pct: number;
}

/** A profile's time by function. */
export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  /** Time spent in the function itself, largest first. */
  self: HotSpot[];
  /** Time spent in the function or anything it called, for own code only, largest first. */
  inclusive: HotSpot[];
}

const IDLE = new Set(["(idle)", "(program)"]);

function shortUrl(url: string, root: string): string {
  if (!url) return "";
  const path = url.replace(/^file:\/\//, "");
  return path.startsWith(root) ? path.slice(root.length) : path.replace(/^.*\/node_modules\//, "npm:");
}

/** Sums samples by function; `root` is stripped from paths, and own code is what lies under `root` + `src/`. */
export function summarizeProfile(profile: CpuProfile, root: string, top = 20): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const key = (id: number) => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = shortUrl(url, root);
    return file ? `${functionName || "(anonymous)"} (${file}:${lineNumber + 1})` : functionName;
  };
  const isOwn = (id: number) => byId.get(id)!.callFrame.url.replace(/^file:\/\//, "").startsWith(`${root}src/`);
  const msPerSample = profile.samples.length
    ? (profile.endTime - profile.startTime) / 1000 / profile.samples.length
    : 0;
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  for (const sample of profile.samples) {
    const name = byId.get(sample)?.callFrame.functionName ?? "";
    if (IDLE.has(name)) {
      idle++;
      continue;
    }
    self.set(key(sample), (self.get(key(sample)) ?? 0) + 1);
    const seen = new Set<string>();
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      if (!isOwn(id)) continue;
      const k = key(id);
      if (!seen.has(k)) inclusive.set(k, (inclusive.get(k) ?? 0) + 1);
      seen.add(k);
    }
  }
  const busy = profile.samples.length - idle;
  const rank = (counts: Map<string, number>) =>
    [...counts].sort((a, b) => b[1] - a[1]).slice(0, top).map(([where, n]) => ({
      where,
      ms: Math.round(n * msPerSample),
      pct: busy ? Math.round((n / busy) * 1000) / 10 : 0,
    }));
  return {
    totalMs: Math.round(profile.samples.length * msPerSample),
    idleMs: Math.round(idle * msPerSample),
    self: rank(self),
    inclusive: rank(inclusive),
  };
}

function printSummary(file: string, summary: ProfileSummary): void {
  console.log(`\n${file}: ${summary.totalMs} ms sampled, ${summary.idleMs} ms idle`);
  console.log("Self time (percent of busy time):");
  for (const h of summary.self) console.log(`  ${h.pct.toFixed(1).padStart(5)}%  ${h.ms} ms  ${h.where}`);
  console.log("Inclusive time in the gateway's own code (src/):");
  for (const h of summary.inclusive) console.log(`  ${h.pct.toFixed(1).padStart(5)}%  ${h.ms} ms  ${h.where}`);
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url).pathname;
  const dir = Deno.args[0];
  if (!dir) {
    console.error("Usage: deno task bench:profile DIR (a directory of .cpuprofile files)");
    Deno.exit(2);
  }
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.name.endsWith(".cpuprofile")) continue;
    const profile = JSON.parse(await Deno.readTextFile(`${dir}/${entry.name}`)) as CpuProfile;
    printSummary(entry.name, summarizeProfile(profile, root, Number(Deno.args[1] ?? 25)));
  }
}
