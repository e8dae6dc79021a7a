/**
 * @module An OpenAI-shaped upstream's embeddings answer passed to an OpenAI client as the bytes it came in, when nothing
 * in it needs changing (see docs/protocols.md, "Embeddings"): one call, its vectors in the request's order and in the
 * encoding the client asked for, its usage counted, no backslash in it, and none of the upstream's secrets in it in any
 * form the redaction of other answers looks for. Only the model id is changed, by splicing the public id over the
 * upstream's. Anything else is undefined, and the answer is read and written again as any other is.
 */
import { bytePattern, indexOfMarker } from "../core/byte_search.ts";
import { joined } from "../core/bytes.ts";
import { secretForms } from "../core/redact.ts";
import { isObject } from "../core/types.ts";
import type { EmbedPart } from "../protocols/embeddings.ts";
import { openAiEmbeddingShape } from "../protocols/openai_embeddings.ts";

/** The part of the answer the relay counts, and the bytes the client gets. */
export interface PassedEmbeddings {
  part: EmbedPart;
  bytes: Uint8Array;
}

/** What the answer must match to pass as it is. */
export interface PassRule {
  /** The inputs sent (one call's, the whole request's). */
  count: number;
  /** The encoding the client asked for. */
  encoding: "float" | "base64";
  /** The public model id the answer must name. */
  model: string;
  /** Every secret the upstream is sent. */
  secrets: readonly string[];
}

/** `bytes` as the client's answer, or undefined when something in it needs changing (or a secret is in it). */
export function passedEmbeddings(bytes: Uint8Array, headers: Headers, rule: PassRule): PassedEmbeddings | undefined {
  const text = new TextDecoder().decode(bytes);
  // A secret anywhere sends the answer to the careful path, which passes only vectors and refuses a vector that holds
  // one. So does a backslash (vectors never hold one): with none, no secret can be spelt with escapes, and the bytes
  // are searched only for the forms written without them.
  if (text.indexOf("\\") !== -1 || quotesSecret(bytes, rule.secrets)) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(body) || typeof body.model !== "string") return undefined;
  // The shape's own reading checks the count and that each vector is numbers or strict base64 of float32 values.
  const part = openAiEmbeddingShape.read(body, rule.count, headers);
  if (!part || part.tokens === undefined) return undefined;
  const data = body.data as { index?: unknown }[];
  const wanted = rule.encoding === "base64" ? "string" : "object";
  for (let i = 0; i < part.vectors.length; i++) {
    if (data[i].index !== i || typeof part.vectors[i] !== wanted) return undefined;
  }
  if (body.model === rule.model) return { part, bytes };
  const spliced = withModel(bytes, body.model, rule.model);
  return spliced && { part, bytes: spliced };
}

/** True when `bytes` hold a form of a secret that is written without a backslash (its other forms cannot be there). */
function quotesSecret(bytes: Uint8Array, secrets: readonly string[]): boolean {
  const encoder = new TextEncoder();
  for (const form of secretForms(secrets)) {
    if (!form.includes("\\") && indexOfMarker(bytes, bytePattern(encoder.encode(form))) !== -1) return true;
  }
  return false;
}

/**
 * `bytes` with `"model":"<from>"` replaced by the same with `to`, when it occurs exactly once (the string can stand
 * nowhere else: a JSON string holds no bare quote); undefined otherwise (spaced out, or twice), so the answer is
 * written again.
 */
function withModel(bytes: Uint8Array, from: string, to: string): Uint8Array | undefined {
  const encoder = new TextEncoder();
  const pattern = bytePattern(encoder.encode(`"model":${JSON.stringify(from)}`));
  const at = indexOfMarker(bytes, pattern);
  if (at === -1 || indexOfMarker(bytes, pattern, at + 1) !== -1) return undefined;
  const after = at + pattern.bytes.length;
  return joined([bytes.subarray(0, at), encoder.encode(`"model":${JSON.stringify(to)}`), bytes.subarray(after)]);
}
