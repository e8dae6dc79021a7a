/**
 * @module An embeddings request in each upstream's shape: which shape an upstream kind and model speak, the request's
 * inputs cut into calls of at most the shape's batch, and each call's body (OpenAI's, Gemini's batchEmbedContents,
 * Vertex AI's predict, Titan's, Cohere's). What a shape cannot take (token ids, a vector length) is a 400 naming the field, before any
 * call. Pure.
 */
import type { UpstreamConfig } from "../core/config.ts";
import { invalidField } from "../core/validation.ts";
import type { JsonObject } from "../core/types.ts";
import { bedrockEmbeddingShape } from "../protocols/bedrock_embeddings.ts";
import type { EmbeddingShape, EmbedInput, EmbedRequest } from "../protocols/embeddings.ts";
import { geminiEmbeddingShape } from "../protocols/gemini_embeddings.ts";
import { openAiEmbeddingShape } from "../protocols/openai_embeddings.ts";
import { vertexEmbeddingShape } from "../protocols/vertex_embeddings.ts";

/** The embeddings shape of a model on an upstream kind; undefined for a kind without embeddings. */
export function embeddingShapeOf(kind: UpstreamConfig["protocol"], upstreamModel: string): EmbeddingShape | undefined {
  switch (kind) {
    case "openai":
    case "openai-responses":
    case "azure-openai":
      return openAiEmbeddingShape;
    case "gemini":
      return geminiEmbeddingShape;
    case "gemini-vertex":
      return vertexEmbeddingShape(upstreamModel);
    case "anthropic-bedrock":
      return bedrockEmbeddingShape(upstreamModel);
    default:
      return undefined;
  }
}

/** One call of a request: its inputs' place in the request, and the body sent. */
export interface EmbedCall {
  /** The index of its first input in the request. */
  start: number;
  inputs: EmbedInput[];
  body: JsonObject;
}

/** Gemini's task types as Cohere's `input_type` (Cohere's default, for documents, otherwise). */
const COHERE_INPUT_TYPES: Record<string, string> = {
  RETRIEVAL_QUERY: "search_query",
  QUESTION_ANSWERING: "search_query",
  FACT_VERIFICATION: "search_query",
  CODE_RETRIEVAL_QUERY: "search_query",
  RETRIEVAL_DOCUMENT: "search_document",
  CLASSIFICATION: "classification",
  CLUSTERING: "clustering",
};

/**
 * The calls a request takes on a shape, in order. `dimensionsField` names the client's field for the vector length
 * (`dimensions`, or Gemini's `outputDimensionality`), so a refusal names what the client sent.
 */
export function embedCalls(
  request: EmbedRequest,
  shape: EmbeddingShape,
  options: { upstreamModel: string; dimensionsField: string; encoding?: "float" | "base64" },
): EmbedCall[] {
  if (request.dimensions !== undefined) {
    const why = shape.refusesDimensions(request.dimensions);
    if (why) throw invalidField(options.dimensionsField, `${request.dimensions} cannot be honoured here: ${why}`);
  }
  if (!shape.tokenInputs) {
    const at = request.inputs.findIndex((input) => typeof input !== "string");
    if (at !== -1) {
      throw invalidField(
        request.inputs.length === 1 ? "input" : `input[${at}]`,
        `token ids are taken only by OpenAI-shaped upstreams, and model "${request.model}" is not served by one ` +
          "here: send the text (LangChain: check_embedding_ctx_length=False)",
      );
    }
  }
  const calls: EmbedCall[] = [];
  for (let start = 0; start < request.inputs.length; start += shape.batch) {
    const inputs = request.inputs.slice(start, start + shape.batch);
    calls.push({ start, inputs, body: bodyOf(request, shape, inputs, options) });
  }
  return calls;
}

function bodyOf(
  request: EmbedRequest,
  shape: EmbeddingShape,
  inputs: EmbedInput[],
  options: { upstreamModel: string; encoding?: "float" | "base64" },
): JsonObject {
  const { dimensions } = request;
  const texts = inputs as string[];
  switch (shape.name) {
    case "openai": {
      const body: JsonObject = {
        model: options.upstreamModel,
        input: inputs,
        encoding_format: options.encoding ?? request.encoding,
      };
      if (dimensions !== undefined) body.dimensions = dimensions;
      if (request.user !== undefined) body.user = request.user;
      return body;
    }
    case "gemini":
      return {
        requests: texts.map((text) => {
          const one: JsonObject = { model: `models/${options.upstreamModel}`, content: { parts: [{ text }] } };
          if (request.task !== undefined) one.taskType = request.task;
          if (request.title !== undefined) one.title = request.title;
          if (dimensions !== undefined) one.outputDimensionality = dimensions;
          return one;
        }),
      };
    case "vertex": {
      const instances = texts.map((content) => {
        const one: JsonObject = { content };
        if (request.task !== undefined) one.task_type = request.task;
        if (request.title !== undefined) one.title = request.title;
        return one;
      });
      return dimensions === undefined ? { instances } : { instances, parameters: { outputDimensionality: dimensions } };
    }
    case "titan":
      return dimensions === undefined ? { inputText: texts[0] } : { inputText: texts[0], dimensions };
    case "cohere":
    case "cohere-v4": {
      const body: JsonObject = {
        texts,
        input_type: COHERE_INPUT_TYPES[request.task ?? ""] ?? "search_document",
        embedding_types: ["float"],
      };
      if (dimensions !== undefined) body.output_dimension = dimensions;
      return body;
    }
  }
}
