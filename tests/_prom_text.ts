/** @module A strict reader of the Prometheus text exposition format (0.0.4) for tests: it throws on any violation. */

/** One sample line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric family: its type and samples. */
export interface Family {
  type: string;
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text: string, line: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new SyntaxError(`Bad value in "${line}"`);
  return Number(text);
}

/** Reads `{a="x",b="y"}` starting at `text[0] === "{"`; returns the labels and the rest of the line. */
function parseLabels(text: string, line: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  while (text[i] !== "}") {
    const eq = text.indexOf("=", i);
    const name = text.slice(i, eq);
    if (eq === -1 || !LABEL_NAME.test(name)) throw new SyntaxError(`Bad label name in "${line}"`);
    if (name in labels) throw new SyntaxError(`Repeated label "${name}" in "${line}"`);
    if (text[eq + 1] !== '"') throw new SyntaxError(`Unquoted label value in "${line}"`);
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\n") throw new SyntaxError(`Raw newline in "${line}"`);
      if (text[j] !== "\\") {
        value += text[j];
        continue;
      }
      const next = text[++j];
      if (next === "\\" || next === '"') value += next;
      else if (next === "n") value += "\n";
      else throw new SyntaxError(`Bad escape in "${line}"`);
    }
    if (j >= text.length) throw new SyntaxError(`Unterminated label value in "${line}"`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") throw new SyntaxError(`Expected , or } in "${line}"`);
  }
  return { labels, rest: text.slice(i + 1) };
}

function familyOf(sampleName: string, families: Map<string, Family>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = sampleName.endsWith(suffix) ? sampleName.slice(0, -suffix.length) : "";
    if (base && families.get(base)?.type === "histogram") return base;
  }
  return sampleName;
}

/** Parses a page, checking syntax, TYPE placement, grouping, unique series and histogram consistency. */
export function parsePrometheusText(page: string): Map<string, Family> {
  if (!page.endsWith("\n")) throw new SyntaxError("Page does not end with a newline");
  const families = new Map<string, Family>();
  const seenSeries = new Set<string>();
  const closed = new Set<string>();
  const typed = new Set<string>();
  let current: string | undefined;
  for (const line of page.slice(0, -1).split("\n")) {
    if (line === "") continue;
    const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (comment) {
      const [, kind, name, rest] = comment;
      if (!METRIC_NAME.test(name)) throw new SyntaxError(`Bad metric name in "${line}"`);
      const family = families.get(name) ?? { type: "untyped", samples: [] };
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new SyntaxError(`Unknown type in "${line}"`);
        if (typed.has(name) || family.samples.length > 0) {
          throw new SyntaxError(`TYPE for "${name}" repeated or after its samples`);
        }
        typed.add(name);
        family.type = rest;
      } else family.help = rest;
      families.set(name, family);
      continue;
    }
    if (line.startsWith("#")) continue;
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    if (!nameMatch) throw new SyntaxError(`Bad sample line "${line}"`);
    const sampleName = nameMatch[0];
    let rest = line.slice(sampleName.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith("{")) ({ labels, rest } = parseLabels(rest, line));
    const parts = rest.trim().split(" ");
    if (!rest.startsWith(" ") || parts.length < 1 || parts.length > 2) throw new SyntaxError(`Bad sample "${line}"`);
    const value = parseValue(parts[0], line);
    const base = familyOf(sampleName, families);
    if (base !== current) {
      if (current !== undefined) closed.add(current);
      if (closed.has(base)) throw new SyntaxError(`Samples of "${base}" are not grouped together`);
      current = base;
    }
    const series = sampleName + JSON.stringify(Object.entries(labels).sort());
    if (seenSeries.has(series)) throw new SyntaxError(`Duplicate series "${line}"`);
    seenSeries.add(series);
    const family = families.get(base) ?? { type: "untyped", samples: [] };
    family.samples.push({ name: sampleName, labels, value });
    families.set(base, family);
  }
  for (const [name, family] of families) if (family.type === "histogram") checkHistogram(name, family);
  return families;
}

function checkHistogram(name: string, family: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const sample of family.samples) {
    const { le: _le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name === `${name}_bucket`);
    const count = samples.find((s) => s.name === `${name}_count`);
    if (!count || !samples.some((s) => s.name === `${name}_sum`)) {
      throw new SyntaxError(`${name}: missing _sum or _count`);
    }
    const inf = buckets.find((b) => b.labels.le === "+Inf");
    if (!inf || inf.value !== count.value) throw new SyntaxError(`${name}: +Inf bucket differs from _count`);
    const ordered = buckets.map((b) => [parseValue(b.labels.le, name), b.value]).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < ordered.length; i++) {
      if (ordered[i][1] < ordered[i - 1][1]) throw new SyntaxError(`${name}: buckets are not cumulative`);
    }
  }
}

/** The value of one series, or undefined. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  for (const family of families.values()) {
    for (const sample of family.samples) {
      if (sample.name === name && Object.entries(labels).every(([k, v]) => sample.labels[k] === v)) return sample.value;
    }
  }
  return undefined;
}
