/**
 * @module Guardrail rules applied to text: every match of a rule's detectors found, masked with a keyed placeholder,
 * refused, or only counted; placeholders of this request's own matches turned back into the originals; and the same
 * over a text that arrives in pieces (a stream's deltas), holding back only the end that could still begin a match.
 */
import { GatewayError } from "./errors.ts";
import { PLACEHOLDER } from "./detectors.ts";
import {
  compileDetector,
  findAll,
  type Found,
  type GuardAction,
  type GuardScope,
  heldFor,
  type ScanRule,
  scanRule,
} from "./text_match.ts";

export {
  type CompiledDetector,
  compileDetector,
  type GuardAction,
  type GuardScope,
  type ScanRule,
  scanRule,
} from "./text_match.ts";

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

const RESTORING: ScanRule = scanRule({
  name: "",
  action: "log",
  restore: false,
  detectors: [compileDetector(PLACEHOLDER)],
});
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
