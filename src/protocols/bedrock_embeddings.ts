/**
 * @module The embedding models of Amazon Bedrock through InvokeModel: Amazon Titan Text Embeddings v2 (one text a
 * call, `dimensions` 256, 512 or 1024, its token count in the answer) and Cohere Embed v3 and v4 (96 texts a call,
 * v4's `output_dimension` 256 to 1536, the token count in a header), and which of them a model id names.
 */
import { isObject } from "../core/types.ts";
import { tokenCount } from "../core/usage.ts";
import { type EmbeddingShape, type EmbeddingShapeName, isNumbers, vectorsOf } from "./embeddings.ts";

/** The `dimensions` Titan v2 takes, and the `output_dimension` Cohere Embed v4 takes. */
const TITAN_DIMENSIONS = [256, 512, 1024];
const COHERE_V4_DIMENSIONS = [256, 512, 1024, 1536];

/** Bedrock's header with the input tokens of an InvokeModel call. */
const INPUT_TOKENS_HEADER = "x-amzn-bedrock-input-token-count";

function refusing(allowed: readonly number[], model: string) {
  return (dimensions: number) => allowed.includes(dimensions) ? undefined : `${model} takes only ${allowed.join(", ")}`;
}

/** The tokens an InvokeModel answer's header counts, when it has one. */
function headerTokens(headers: Headers): number | undefined {
  const value = headers.get(INPUT_TOKENS_HEADER);
  return value !== null && /^\d+$/.test(value) ? tokenCount(Number(value)) : undefined;
}

/** Amazon Titan Text Embeddings v2. */
export const titanEmbeddingShape: EmbeddingShape = {
  name: "titan",
  batch: 1,
  tokenInputs: false,
  refusesDimensions: refusing(TITAN_DIMENSIONS, "Amazon Titan Text Embeddings v2"),
  read(body, count, headers) {
    if (count !== 1 || !isNumbers(body.embedding)) return undefined;
    const tokens = typeof body.inputTextTokenCount === "number" ? tokenCount(body.inputTextTokenCount) : undefined;
    return { vectors: [body.embedding], tokens: tokens ?? headerTokens(headers) };
  },
};

/** Cohere's answer: `embeddings` as arrays, or by type (`{float: [...]}`) when the request named types. */
function cohereShape(name: EmbeddingShapeName, refusesDimensions: EmbeddingShape["refusesDimensions"]): EmbeddingShape {
  return {
    name,
    batch: 96,
    tokenInputs: false,
    refusesDimensions,
    read(body, count, headers) {
      const embeddings = isObject(body.embeddings) ? body.embeddings.float : body.embeddings;
      const vectors = vectorsOf(embeddings, count, (item) => item);
      return vectors && { vectors, tokens: headerTokens(headers) };
    },
  };
}

/** Cohere Embed v3 (English, multilingual): no output dimensions of its own choosing. */
export const cohereV3EmbeddingShape = cohereShape("cohere", () => "Cohere Embed v3 has no dimensions setting");

/** Cohere Embed v4. */
export const cohereV4EmbeddingShape = cohereShape("cohere-v4", refusing(COHERE_V4_DIMENSIONS, "Cohere Embed v4"));

/** The shape of a Bedrock embedding model by its id (an inference profile's geography allowed). */
export function bedrockEmbeddingShape(upstreamModel: string): EmbeddingShape | undefined {
  const id = upstreamModel.replace(/^[a-z-]+\.(?=(amazon|cohere)\.)/, "");
  if (id.startsWith("amazon.titan-embed-text-v2")) return titanEmbeddingShape;
  if (id.startsWith("cohere.embed-v4")) return cohereV4EmbeddingShape;
  if (id.startsWith("cohere.embed-")) return cohereV3EmbeddingShape;
  return undefined;
}
