/**
 * @module Messages passthrough that keeps unverifiable thinking away from Anthropic: thinking that came from
 * another model through this gateway has no signature, and the real API rejects such a block, so it is removed
 * from the history on the way up. Everything else (signed thinking included) passes byte for byte.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { identity, logDrop, type TranslateContext, type Translation } from "./identity.ts";
import { textSignatureIn } from "./messages_gemini_request.ts";
import { carriesReasoning } from "./responses_reasoning.ts";

/** True for a thinking block the real API cannot verify: unsigned, or carrying a Gemini signature or Responses reasoning. */
function unsigned(block: unknown): boolean {
  if (textSignatureIn(block) !== undefined || carriesReasoning(block)) return true;
  return isObject(block) && block.type === "thinking" &&
    (typeof block.signature !== "string" || block.signature === "");
}

/** The messages with unsigned thinking removed, or undefined when there is none (the common case). */
function withoutUnsignedThinking(messages: unknown): unknown[] | undefined {
  if (!Array.isArray(messages)) return undefined;
  const found = messages.some((m) =>
    isObject(m) && m.role === "assistant" && Array.isArray(m.content) && m.content.some(unsigned)
  );
  if (!found) return undefined;
  return messages.map((m) => {
    if (!isObject(m) || m.role !== "assistant" || !Array.isArray(m.content)) return m;
    const content = m.content.filter((block) => !unsigned(block));
    // An assistant turn must keep some content; an empty text stands in where thinking was all there was.
    return { ...m, content: content.length > 0 ? content : [{ type: "text", text: "..." }] };
  });
}

/** The Messages-to-Anthropic translation: identity, minus thinking the upstream would reject. */
export function anthropicPassthrough(ctx: TranslateContext): Translation {
  const base = identity(ctx);
  return {
    request(body: JsonObject) {
      const upstream = base.request(body);
      const messages = withoutUnsignedThinking(body.messages);
      if (!messages) return upstream;
      logDrop(ctx, { field: "messages[].content[]", type: "thinking", reason: "no signature" });
      return { ...upstream, messages };
    },
    response: base.response,
  };
}
