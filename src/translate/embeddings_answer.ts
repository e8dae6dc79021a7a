/**
 * @module The answers of an embeddings request's calls put back together in the request's order, and written in the
 * client's shape: OpenAI's list (each vector as floats or as base64, as the client asked, whatever the upstream gave)
 * or Gemini's `embedding` / `embeddings`. Input tokens are the upstreams' counts, estimated where one counts none.
 * Pure.
 */
import { estimateTokens } from "../core/estimate.ts";
import type { JsonObject } from "../core/types.ts";
import { decodeVector, type EmbedPart, type EmbedRequest, encodeVector, type Vector } from "../protocols/embeddings.ts";
import type { EmbedCall } from "./embeddings_request.ts";

/** Every vector of a request in its order, and the input tokens it used. */
export interface EmbedResult {
  vectors: Vector[];
  tokens: number;
  /** True when some call's tokens were estimated (its upstream counts none). */
  estimated: boolean;
}

/** The calls' answers (`parts[i]` answers `calls[i]`) as one result. */
export function mergeParts(calls: readonly EmbedCall[], parts: readonly EmbedPart[]): EmbedResult {
  const vectors: Vector[] = [];
  let tokens = 0;
  let estimated = false;
  calls.forEach((call, i) => {
    const part = parts[i];
    for (const vector of part.vectors) vectors.push(vector);
    if (part.tokens !== undefined) tokens += part.tokens;
    else {
      estimated = true;
      for (const input of call.inputs) {
        tokens += typeof input === "string" ? estimateTokens(input.length) : input.length;
      }
    }
  });
  return { vectors, tokens, estimated };
}

/** A vector as floats. */
function floats(vector: Vector): number[] {
  return typeof vector === "string" ? decodeVector(vector) ?? [] : vector;
}

/** OpenAI's answer: the list, each vector in the client's encoding, and the usage. */
export function openAiEmbedAnswer(request: EmbedRequest, result: EmbedResult): JsonObject {
  const base64 = request.encoding === "base64";
  return {
    object: "list",
    data: result.vectors.map((vector, index) => ({
      object: "embedding",
      index,
      embedding: base64 ? (typeof vector === "string" ? vector : encodeVector(vector)) : floats(vector),
    })),
    model: request.model,
    usage: { prompt_tokens: result.tokens, total_tokens: result.tokens },
  };
}

/** Gemini's answer: `embedding` for embedContent, `embeddings` for batchEmbedContents. */
export function geminiEmbedAnswer(result: EmbedResult, batch: boolean): JsonObject {
  if (!batch) return { embedding: { values: floats(result.vectors[0]) } };
  return { embeddings: result.vectors.map((vector) => ({ values: floats(vector) })) };
}
