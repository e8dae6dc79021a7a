/**
 * @module OpenAI's POST /v1/embeddings: the body a client sends checked field by field (the 400 names the field), and
 * the shape as an upstream speaks it (OpenAI, Azure OpenAI and compatible services): 2,048 inputs a call, token ids
 * taken, its answer's `data` and `usage`.
 */
import { invalidField } from "../core/validation.ts";
import { isObject } from "../core/types.ts";
import { tokenCount } from "../core/usage.ts";
import { type EmbeddingShape, type EmbedInput, type EmbedRequest, MAX_INPUTS, vectorsOf } from "./embeddings.ts";

/** The request an OpenAI client sent, checked; a 400 naming the field for anything the gateway cannot serve. */
export function readOpenAiEmbedRequest(body: unknown): EmbedRequest {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object");
  const { model, encoding_format: encoding, dimensions, user } = body;
  if (typeof model !== "string" || model === "") throw invalidField("model", "is required (a model id)");
  if (encoding !== undefined && encoding !== "float" && encoding !== "base64") {
    throw invalidField("encoding_format", 'must be "float" or "base64"');
  }
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && (dimensions as number) > 0)) {
    throw invalidField("dimensions", "must be a positive integer");
  }
  if (user !== undefined && typeof user !== "string") throw invalidField("user", "must be a string");
  return {
    model,
    inputs: inputsOf(body.input),
    dimensions: dimensions as number | undefined,
    encoding: encoding ?? "float",
    user,
  };
}

/** `input` as a list of inputs: a string, strings, one token array or token arrays, none of them empty. */
function inputsOf(input: unknown): EmbedInput[] {
  if (input === undefined || input === null) throw invalidField("input", "is required");
  if (typeof input === "string") {
    if (input === "") throw invalidField("input", "must not be an empty string");
    return [input];
  }
  if (!Array.isArray(input)) throw invalidField("input", "must be a string, an array of strings or token arrays");
  if (input.length === 0) throw invalidField("input", "must not be an empty array");
  if (input.length > MAX_INPUTS) {
    throw invalidField("input", `must hold at most ${MAX_INPUTS} inputs (it holds ${input.length})`);
  }
  // One token array is one input; an array of arrays is many.
  if (typeof input[0] === "number") return [tokensOf(input, "input")];
  return input.map((item, i) => {
    const field = `input[${i}]`;
    if (typeof item === "string") {
      if (item === "") throw invalidField(field, "must not be an empty string");
      return item;
    }
    if (Array.isArray(item)) return tokensOf(item, field);
    throw invalidField(field, "must be a string or an array of token ids");
  });
}

/** A token array: non-empty, each a whole number of at least 0. */
function tokensOf(items: unknown[], field: string): number[] {
  if (items.length === 0) throw invalidField(field, "must not be an empty array");
  items.forEach((item, i) => {
    if (!Number.isInteger(item) || (item as number) < 0) {
      throw invalidField(`${field}[${i}]`, "must be a token id (an integer of at least 0)");
    }
  });
  return items as number[];
}

/** The OpenAI shape as an upstream speaks it. */
export const openAiEmbeddingShape: EmbeddingShape = {
  name: "openai",
  batch: MAX_INPUTS,
  tokenInputs: true,
  // The model says (ada-002 refuses it): the upstream's own 400 is the answer.
  refusesDimensions: () => undefined,
  read(body, count) {
    if (!Array.isArray(body.data)) return undefined;
    // Answers carry their `index`; they are put in that order, whatever order they came in.
    const ordered = [...body.data].sort((a, b) => indexOf(a) - indexOf(b));
    const vectors = vectorsOf(ordered, count, (item) => isObject(item) ? item.embedding : undefined);
    if (!vectors) return undefined;
    const usage = isObject(body.usage) ? body.usage : undefined;
    return { vectors, tokens: usage ? tokenCount(usage.prompt_tokens ?? usage.total_tokens) : undefined };
  },
};

function indexOf(item: unknown): number {
  return isObject(item) && typeof item.index === "number" ? item.index : 0;
}
