/**
 * @module Finding guardrail matches in text: each detector compiled once (the tables of its characters, its pattern
 * anchored for a search), a rule's fixed beginnings searched for in one pass, every match found leftmost first and
 * without overlap, and how much of a text's end could still begin one.
 */
import type { Detector } from "./detectors.ts";

/** What a rule does with a match. */
export type GuardAction = "mask" | "block" | "log";
/** Where a rule looks: what a client sends a model, what a model answers, MCP tool arguments and results. */
export type GuardScope = "input" | "output" | "tools";

/** A detector with the table of its characters, made once at start. */
export interface CompiledDetector {
  detector: Detector;
  /** 1 for each ASCII character of the detector's body; undefined when any character may be part of a match. */
  body?: Uint8Array;
  /** 1 for each ASCII character a match may begin with; undefined when any of the body's may. */
  first?: Uint8Array;
  /** The pattern anchored where a search puts it (sticky), for a detector whose matches begin with its `starts`. */
  sticky?: RegExp;
  /** 1 for each ASCII character that may not come just before a match. */
  notAfter?: Uint8Array;
}

/** One rule's detectors, as a scan uses them. */
export interface ScanRule {
  name: string;
  action: GuardAction;
  /** Placeholders of this rule's masks are restored in the answer to the same request. */
  restore: boolean;
  detectors: readonly CompiledDetector[];
  /**
   * The fixed beginnings of its detectors' matches: one search finds them all, and each one found is tried by the
   * detectors that begin with it (by its first character), so a long text is read once, not once a beginning.
   */
  beginnings: { search?: RegExp; byFirst: Map<string, [string, CompiledDetector][]> };
}

/** Makes a detector's table. */
export function compileDetector(detector: Detector): CompiledDetector {
  const table = (chars: RegExp) => {
    const out = new Uint8Array(128);
    for (let code = 0; code < 128; code++) if (chars.test(String.fromCharCode(code))) out[code] = 1;
    return out;
  };
  return {
    detector,
    body: detector.body && table(detector.body),
    first: detector.first && table(detector.first),
    sticky: detector.starts && new RegExp(detector.pattern.source, "y"),
    notAfter: detector.notAfter && table(detector.notAfter),
  };
}

const escaped = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");

/** A scan rule of `detectors`, with the one search for their fixed beginnings. */
export function scanRule(fields: Omit<ScanRule, "beginnings">): ScanRule {
  const byFirst = new Map<string, [string, CompiledDetector][]>();
  const starts = new Set<string>();
  for (const compiled of fields.detectors) {
    if (!compiled.sticky) continue;
    for (const start of compiled.detector.starts!) {
      starts.add(start);
      const list = byFirst.get(start[0]) ?? [];
      list.push([start, compiled]);
      byFirst.set(start[0], list);
    }
  }
  const search = starts.size > 0 ? new RegExp([...starts].map(escaped).join("|"), "g") : undefined;
  return { ...fields, beginnings: { search, byFirst } };
}

const SEVERITY: Record<GuardAction, number> = { block: 3, mask: 2, log: 1 };

/** A match: where, of which rule and kind. */
export interface Found {
  start: number;
  end: number;
  rule: ScanRule;
  kind: string;
}

/** A candidate's accepted length, or 0. */
function accepted(detector: Detector, match: string): number {
  if (match === "") return 0;
  return detector.accept ? detector.accept(match) : match.length;
}

/**
 * The matches in `text` of a detector without fixed beginnings; one with an anchor is run only around each anchor, so a
 * long text costs a few `indexOf`s, not a pattern run from every position.
 */
function matchesOf(text: string, compiled: CompiledDetector, found: (start: number, length: number) => void): void {
  const { detector } = compiled;
  const pattern = detector.pattern;
  const around = detector.around;
  if (around) {
    let searched = 0;
    for (let at = text.indexOf(around.anchor); at !== -1; at = text.indexOf(around.anchor, at + 1)) {
      // The window starts one character early, so a look-behind sees what precedes a match.
      const from = Math.max(searched, at - around.before - 1, 0);
      const to = Math.min(text.length, at + around.after + 1);
      if (from >= to) continue;
      const window = text.slice(from, to);
      pattern.lastIndex = 0;
      for (let match = pattern.exec(window); match; match = pattern.exec(window)) {
        const length = accepted(detector, match[0]);
        if (length > 0 && from + match.index >= searched) found(from + match.index, length);
        if (match[0] === "") pattern.lastIndex++;
      }
      searched = Math.max(searched, to - around.after - 1);
    }
    return;
  }
  const { notAfter } = compiled;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (match[0] === "") {
      pattern.lastIndex++;
      continue;
    }
    if (notAfter && match.index > 0 && notAfter[text.charCodeAt(match.index - 1)] === 1) {
      // Part of a longer number or word: a match may still begin further on.
      pattern.lastIndex = match.index + 1;
      continue;
    }
    const length = accepted(detector, match[0]);
    if (length > 0) found(match.index, length);
  }
}

/** Every match in `text`, leftmost first, none overlapping (the longer, then the stricter rule's, wins). */
export function findAll(text: string, rules: readonly ScanRule[]): Found[] {
  const found: Found[] = [];
  for (const rule of rules) {
    const { search, byFirst } = rule.beginnings;
    if (search) {
      search.lastIndex = 0;
      for (let match = search.exec(text); match; match = search.exec(text)) {
        const at = match.index;
        for (const [start, compiled] of byFirst.get(text[at]) ?? []) {
          if (!text.startsWith(start, at)) continue;
          compiled.sticky!.lastIndex = at;
          const candidate = compiled.sticky!.exec(text);
          const length = candidate ? accepted(compiled.detector, candidate[0]) : 0;
          if (length > 0) found.push({ start: at, end: at + length, rule, kind: compiled.detector.kind });
        }
        search.lastIndex = at + 1;
      }
    }
    for (const compiled of rule.detectors) {
      if (compiled.sticky) continue;
      const kind = compiled.detector.kind;
      matchesOf(text, compiled, (start, length) => found.push({ start, end: start + length, rule, kind }));
    }
  }
  if (found.length < 2) return found;
  found.sort((a, b) => a.start - b.start || b.end - a.end || SEVERITY[b.rule.action] - SEVERITY[a.rule.action]);
  const kept: Found[] = [];
  for (const item of found) if (kept.length === 0 || item.start >= kept.at(-1)!.end) kept.push(item);
  return kept;
}

/** How many characters at the end of `text` could begin a match of `compiled` (over-counted, never under). */
export function heldFor(text: string, compiled: CompiledDetector): number {
  const { detector, body, first } = compiled;
  const n = text.length;
  if (!body) return Math.min(n, detector.max - 1);
  const floor = Math.max(0, n - (detector.max - 1));
  let run = n;
  while (run > floor) {
    const code = text.charCodeAt(run - 1);
    if (code >= 128 || body[code] === 0) break;
    run--;
  }
  if (first) { while (run < n && first[text.charCodeAt(run)] !== 1) run++; }
  if (!detector.starts) return n - run;
  for (let i = run; i < n; i++) {
    for (const start of detector.starts) {
      if (text.charCodeAt(i) !== start.charCodeAt(0)) continue;
      if (text.startsWith(start, i) || start.startsWith(text.slice(i))) return n - i;
    }
  }
  return 0;
}
