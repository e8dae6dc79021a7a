/**
 * @module Guardrail rules applied to text: every match of a rule's detectors found, masked with a keyed placeholder,
 * refused, or only counted; placeholders of this request's own matches turned back into the originals; and the same
 * over a text that arrives in pieces (a stream's deltas), holding back only the end that could still begin a match.
 */
import { GatewayError } from "./errors.ts";
import { type Detector, PLACEHOLDER } from "./detectors.ts";

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
}

/** One rule's detectors, as a scan uses them. */
export interface ScanRule {
  name: string;
  action: GuardAction;
  /** Placeholders of this rule's masks are restored in the answer to the same request. */
  restore: boolean;
  detectors: readonly CompiledDetector[];
}

/** One line of a request's guardrail record: how many matches of a kind one rule acted on in one scope. */
export interface GuardHit {
  rule: string;
  kind: string;
  action: GuardAction | "allow";
  scope: GuardScope;
  count: number;
}

/** One request's guardrail state: its hits, and what its masks stand for. */
export interface GuardRun {
  hits: GuardHit[];
  /** Placeholder → the original it replaced, for the restoring rules' matches. */
  restores: Map<string, string>;
  /** The keyed tag of a match (6 hex digits): the same text, the same tag, while the gateway's key lasts. */
  tag(text: string): string;
  /**
   * Set when a blocking rule's match turned up in a text scanned in pieces: what came before it went out, and the
   * stream must end with this refusal before anything more does.
   */
  blocked?: GatewayError;
}

/** Where text is scanned: its scope, and whether it is JSON string content (tool-call arguments as text). */
export interface ScanPlace {
  scope: GuardScope;
  /** The text is inside a JSON string: a match is decoded before it is tagged, an original encoded when restored. */
  json?: boolean;
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
  };
}

const RESTORING: ScanRule = { name: "", action: "log", restore: false, detectors: [compileDetector(PLACEHOLDER)] };
const SEVERITY: Record<GuardAction, number> = { block: 3, mask: 2, log: 1 };

interface Found {
  start: number;
  end: number;
  rule: ScanRule;
  kind: string;
}

/** Every match in `text`, leftmost first, none overlapping (the longer, then the stricter rule's, wins). */
function findAll(text: string, rules: readonly ScanRule[]): Found[] {
  const found: Found[] = [];
  for (const rule of rules) {
    for (const { detector } of rule.detectors) {
      if (detector.starts && !detector.starts.some((start) => text.includes(start))) continue;
      const pattern = detector.pattern;
      pattern.lastIndex = 0;
      for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
        if (match[0] === "") {
          pattern.lastIndex++;
          continue;
        }
        const length = detector.accept ? detector.accept(match[0]) : match[0].length;
        if (length > 0) found.push({ start: match.index, end: match.index + length, rule, kind: detector.kind });
      }
    }
  }
  if (found.length < 2) return found;
  found.sort((a, b) => a.start - b.start || b.end - a.end || SEVERITY[b.rule.action] - SEVERITY[a.rule.action]);
  const kept: Found[] = [];
  for (const item of found) if (kept.length === 0 || item.start >= kept.at(-1)!.end) kept.push(item);
  return kept;
}

/** The rules a scan runs: the scope's, and placeholders to restore when the request masked anything restorable. */
function scanRules(rules: readonly ScanRule[], run: GuardRun, place: ScanPlace): readonly ScanRule[] {
  return place.scope === "output" && run.restores.size > 0 ? [...rules, RESTORING] : rules;
}

/** Counts a hit in the request's record. */
export function countHit(run: GuardRun, hit: Omit<GuardHit, "count">): void {
  const same = run.hits.find((h) =>
    h.rule === hit.rule && h.kind === hit.kind && h.action === hit.action && h.scope === hit.scope
  );
  if (same) same.count++;
  else run.hits.push({ ...hit, count: 1 });
}

const WHAT: Record<GuardScope, string> = { input: "the request", output: "the answer", tools: "the tool call" };

/** The refusal of a blocking rule, naming the rule and the kind, never the match. */
export function guardBlocked(rule: string, scope: GuardScope, reason: string): GatewayError {
  return new GatewayError("invalid_request", `Refused by guardrail "${rule}": ${WHAT[scope]} ${reason}`, {
    code: "guardrail_blocked",
  });
}

/** A JSON string's content decoded; the text itself when it is not one. */
function decoded(text: string): string {
  try {
    return JSON.parse(`"${text}"`);
  } catch {
    return text;
  }
}

/** `text[from, to)` with the matches in `found` (all inside it) acted on. */
function rewrite(text: string, from: number, to: number, found: readonly Found[], run: GuardRun, place: ScanPlace) {
  let out = "";
  let at = from;
  for (const item of found) {
    const match = text.slice(item.start, item.end);
    let replacement = match;
    if (item.rule === RESTORING) {
      const original = run.restores.get(match);
      if (original !== undefined) replacement = place.json ? JSON.stringify(original).slice(1, -1) : original;
    } else {
      countHit(run, { rule: item.rule.name, kind: item.kind, action: item.rule.action, scope: place.scope });
      if (item.rule.action === "block") throw guardBlocked(item.rule.name, place.scope, `holds ${item.kind}`);
      if (item.rule.action === "mask") {
        const original = place.json ? decoded(match) : match;
        replacement = `[REDACTED:${item.kind}:${run.tag(`${item.kind}\u0000${original}`)}]`;
        if (item.rule.restore && place.scope === "input") run.restores.set(replacement, original);
      }
    }
    out += text.slice(at, item.start) + replacement;
    at = item.end;
  }
  return out + text.slice(at, to);
}

/** `text` with every rule applied; throws the refusal of a blocking rule's match. The same string when none matched. */
export function scanText(text: string, rules: readonly ScanRule[], run: GuardRun, place: ScanPlace): string {
  const found = findAll(text, scanRules(rules, run, place));
  return found.length === 0 ? text : rewrite(text, 0, text.length, found, run, place);
}

/** How many characters at the end of `text` could begin a match of `compiled` (over-counted, never under). */
function heldFor(text: string, compiled: CompiledDetector): number {
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

/** A text that arrives in pieces, scanned as it comes. */
export interface TextChannel {
  /** What of the text so far may go out now, rules applied; the end that could begin a match is held back. */
  push(piece: string): string;
  /** The rest, at the text's end. */
  end(): string;
  /** True while characters are held back. */
  holding(): boolean;
}

/** A channel for one text (a content block, a choice's content, a tool call's arguments). */
export function textChannel(rules: readonly ScanRule[], run: GuardRun, place: ScanPlace): TextChannel {
  let held = "";
  // The last character that went out: a pattern's look-behind sees it.
  let before = "";
  function release(text: string, final: boolean): string {
    const all = scanRules(rules, run, place);
    const full = before + text;
    const offset = before.length;
    const found = findAll(full, all).filter((item) => item.start >= offset);
    let end = full.length;
    if (!final) {
      for (const rule of all) {
        for (const compiled of rule.detectors) end = Math.min(end, full.length - heldFor(full, compiled));
      }
      for (const item of found) if (item.start < end && item.end > end) end = item.start;
      // Never between the two halves of a surrogate pair.
      const code = full.charCodeAt(end);
      if (end > offset && code >= 0xdc00 && code <= 0xdfff) end--;
      end = Math.max(end, offset);
    }
    const stop = found.find((item) => item.rule.action === "block" && item.end <= end);
    if (stop) {
      // Text before the match still goes out; the match and all after it never do.
      const out = rewrite(full, offset, stop.start, found.filter((item) => item.end <= stop.start), run, place);
      countHit(run, { rule: stop.rule.name, kind: stop.kind, action: "block", scope: place.scope });
      run.blocked = guardBlocked(stop.rule.name, place.scope, `holds ${stop.kind}`);
      held = "";
      return out;
    }
    const out = rewrite(full, offset, end, found.filter((item) => item.end <= end), run, place);
    held = full.slice(end);
    if (end > offset) before = full[end - 1];
    return out;
  }
  return {
    push: (piece) => run.blocked || (piece === "" && held === "") ? "" : release(held + piece, false),
    end() {
      if (held === "" || run.blocked) return "";
      return release(held, true);
    },
    holding: () => held !== "",
  };
}
