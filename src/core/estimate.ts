/** @module Token estimates where no upstream counts: about four characters per token (docs/protocols.md, "Token estimates"). */
import type { JsonObject } from "./types.ts";

/** About four characters per token. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** A request's prompt (system, messages, Responses input or Gemini contents, tools) in estimated tokens. */
export function estimatePromptTokens(body: JsonObject): number {
  return estimateTokens(
    JSON.stringify([
      body.system ?? body.systemInstruction ?? "",
      body.messages ?? body.input ?? body.contents ?? "",
      body.tools ?? [],
    ]).length,
  );
}
