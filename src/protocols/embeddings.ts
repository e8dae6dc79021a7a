/**
 * @module What every embeddings shape shares: a request and an answer as the gateway holds them between a client's
 * shape and an upstream's, an upstream shape's descriptor (its batch limit, what it takes, how its answer reads), and
 * base64 vectors as OpenAI defines them (the float32 values, little-endian, then standard base64).
 */
import type { JsonObject } from "../core/types.ts";

/** One input: a text, or token ids (OpenAI's shape only). */
export type EmbedInput = string | number[];

/** What a client asked to embed, whatever its shape. */
export interface EmbedRequest {
  /** The public model id. */
  model: string;
  inputs: EmbedInput[];
  /** The vector length asked for (OpenAI's `dimensions`, Gemini's `outputDimensionality`). */
  dimensions?: number;
  /** How the client wants its vectors: OpenAI's `encoding_format` (the SDKs ask for base64 unless told otherwise). */
  encoding: "float" | "base64";
  /** OpenAI's `user`, passed to OpenAI-shaped upstreams. */
  user?: string;
  /** Gemini's `taskType` (a Cohere upstream takes it as its `input_type`). */
  task?: string;
  /** Gemini's `title`, with the `RETRIEVAL_DOCUMENT` task. */
  title?: string;
}

/** A vector as an upstream gave it: numbers, or OpenAI's base64 string. */
export type Vector = number[] | string;

/** What one upstream call answered: a vector per input, in order, and its input tokens when it counts them. */
export interface EmbedPart {
  vectors: Vector[];
  tokens?: number;
}

/** The embeddings shapes upstreams speak. */
export type EmbeddingShapeName = "openai" | "gemini" | "vertex" | "titan" | "cohere" | "cohere-v4";

/** What the gateway knows of one upstream embeddings shape. */
export interface EmbeddingShape {
  name: EmbeddingShapeName;
  /** The most inputs one call takes; a larger request is split (see docs/protocols.md, "Embeddings"). */
  batch: number;
  /** True when token-id inputs are taken as they are (only OpenAI's shape has them). */
  tokenInputs: boolean;
  /** Why `dimensions` cannot be honoured here, or undefined when it can. */
  refusesDimensions(dimensions: number): string | undefined;
  /** The answer of one call with `count` inputs, read; undefined when it is not an answer with that many vectors. */
  read(body: JsonObject, count: number, headers: Headers): EmbedPart | undefined;
}

/** The most inputs one request may hold, whatever the upstream: OpenAI's own limit, which its clients split by. */
export const MAX_INPUTS = 2048;

/** The vector as float32 bytes, little-endian, in standard base64. */
export function encodeVector(values: readonly number[]): string {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i], true);
  return bytes.toBase64();
}

/** The numbers of a base64 vector; undefined when it is not whole float32 values. */
export function decodeVector(text: string): number[] | undefined {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(text);
  } catch {
    return undefined;
  }
  if (bytes.length % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * True for standard base64 of whole float32 values, padded. The runtime's decoder checks it (a regex is far slower),
 * writing into `scratch.bytes`, which grows to the longest vector: one buffer for an answer's vectors, not one each.
 */
function isBase64(text: string, scratch: { bytes: Uint8Array }): boolean {
  const most = Math.ceil(text.length / 4) * 3;
  if (scratch.bytes.length < most) scratch.bytes = new Uint8Array(most);
  try {
    const { read, written } = scratch.bytes.setFromBase64(text, { lastChunkHandling: "strict" });
    return read === text.length && written % 4 === 0;
  } catch {
    return false;
  }
}

/** True for an array of numbers (a vector as JSON floats). */
export function isNumbers(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== "number") return false;
  return true;
}

/** The vectors of `items` read by `pick`, when there are exactly `count` and each is one. */
export function vectorsOf(
  items: unknown,
  count: number,
  pick: (item: unknown) => unknown,
): Vector[] | undefined {
  if (!Array.isArray(items) || items.length !== count) return undefined;
  const out: Vector[] = [];
  const scratch = { bytes: new Uint8Array(0) };
  for (const item of items) {
    const vector = pick(item);
    if (!isNumbers(vector) && !(typeof vector === "string" && isBase64(vector, scratch))) return undefined;
    out.push(vector);
  }
  return out;
}
