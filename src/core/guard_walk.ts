/**
 * @module Guardrail rules applied to a JSON body, whatever its protocol: every string a person or a model wrote is
 * scanned (messages, system prompts and instructions, tool-call arguments and tool results), while what only names or
 * encodes (ids, roles, types, models, signatures, sealed items, base64 images and files) stays as it is.
 */
import { type GuardRun, type ScanPlace, type ScanRule, scanText } from "./text_scan.ts";

/** Fields that name, number or seal, never free text: a match there is not someone's data (see guardrails.md). */
const UNSCANNED = new Set([
  "id",
  "type",
  "role",
  "model",
  "object",
  "call_id",
  "tool_call_id",
  "tool_use_id",
  "item_id",
  "response_id",
  "previous_response_id",
  "signature",
  "thoughtSignature",
  "thought_signature",
  "encrypted_content",
  "file_id",
  "file_data",
  "media_type",
  "mimeType",
  "mime_type",
  "finish_reason",
  "stop_reason",
  "status",
]);
/** Fields whose string is JSON text: a tool call's arguments, as OpenAI's protocols carry them. */
const JSON_TEXT = new Set(["arguments"]);

/** True when `data` beside these fields is base64 of something that is not text (an image, a PDF). */
function binaryData(parent: Record<string, unknown>): boolean {
  const type = parent.media_type ?? parent.mimeType ?? parent.mime_type;
  return typeof type !== "string" || !type.startsWith("text/");
}

/**
 * `value` with `rules` applied to every free-text string in it; the same value when nothing changed. Each scanned
 * string (as it leaves) is added to `texts` when given, for the webhooks.
 */
export function guardValue<T>(
  value: T,
  rules: readonly ScanRule[],
  run: GuardRun,
  options: ScanPlace & { texts?: string[] },
): T {
  const place: ScanPlace = { scope: options.scope };
  const json: ScanPlace = { scope: options.scope, json: true };
  function text(input: string, at: ScanPlace): string {
    // A data URL is an image or a file, base64: never anyone's words.
    if (input.startsWith("data:")) return input;
    const out = rules.length === 0 && run.restores.size === 0 ? input : scanText(input, rules, run, at);
    if (options.texts && out !== "") options.texts.push(out);
    return out;
  }
  function walk(input: unknown, at: ScanPlace): unknown {
    if (typeof input === "string") return text(input, at);
    if (Array.isArray(input)) {
      let copy: unknown[] | undefined;
      input.forEach((item, i) => {
        const out = walk(item, at);
        if (out !== item) (copy ??= [...input])[i] = out;
      });
      return copy ?? input;
    }
    if (input === null || typeof input !== "object") return input;
    const object = input as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(object)) {
      if (UNSCANNED.has(key) || (key === "data" && binaryData(object))) continue;
      const out = walk(item, JSON_TEXT.has(key) ? json : at);
      if (out !== item) (copy ??= { ...object })[key] = out;
    }
    return copy ?? input;
  }
  return walk(value, place) as T;
}
