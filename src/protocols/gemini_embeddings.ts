/**
 * @module The Gemini API's embeddings: `models/{model}:embedContent` and `:batchEmbedContents` as a client sends them
 * (checked, the 400 naming the field), and as an upstream speaks them (the Gemini API, Gemini on Vertex AI): 100
 * requests a call, texts only, `outputDimensionality`, vectors as `values`, token counts only where Vertex gives them.
 */
import { invalidField } from "../core/validation.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount } from "../core/usage.ts";
import { type EmbeddingShape, type EmbedRequest, MAX_INPUTS, vectorsOf } from "./embeddings.ts";

/** The most requests one `batchEmbedContents` call takes; the API refuses more with a 400 INVALID_ARGUMENT. */
export const GEMINI_BATCH = 100;

/** The text of a `content`: its text parts joined (only text counts for an embedding); a 400 when it has none. */
function textOf(content: unknown, field: string): string {
  if (!isObject(content)) throw invalidField(field, "is required (a content with text parts)");
  if (!Array.isArray(content.parts) || content.parts.length === 0) {
    throw invalidField(`${field}.parts`, "must hold at least one text part");
  }
  const texts = content.parts.map((part, i) => {
    const text = isObject(part) ? part.text : undefined;
    if (typeof text !== "string") throw invalidField(`${field}.parts[${i}].text`, "is required (a text part)");
    return text;
  });
  const text = texts.join("\n");
  if (text === "") throw invalidField(`${field}.parts`, "must not be empty text");
  return text;
}

/** One embedContent request's settings, checked. */
function settingsOf(request: JsonObject, field: string): Pick<EmbedRequest, "dimensions" | "task" | "title"> {
  const { outputDimensionality: dimensions, taskType: task, title } = request;
  const at = (name: string) => field ? `${field}.${name}` : name;
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && (dimensions as number) > 0)) {
    throw invalidField(at("outputDimensionality"), "must be a positive integer");
  }
  if (task !== undefined && typeof task !== "string") throw invalidField(at("taskType"), "must be a task type");
  if (title !== undefined && typeof title !== "string") throw invalidField(at("title"), "must be a string");
  return { dimensions: dimensions as number | undefined, task, title };
}

/**
 * The request a Gemini client sent: one content (`embedContent`) or many (`batchEmbedContents`), each request of a
 * batch with the same settings as the first (the gateway sends one set of settings upstream).
 */
export function readGeminiEmbedRequest(model: string, body: unknown, batch: boolean): EmbedRequest {
  if (!isObject(body)) throw invalidField("body", "must be a JSON object");
  if (!batch) return { model, inputs: [textOf(body.content, "content")], encoding: "float", ...settingsOf(body, "") };
  const { requests } = body;
  if (!Array.isArray(requests) || requests.length === 0) {
    throw invalidField("requests", "must hold at least one request");
  }
  if (requests.length > MAX_INPUTS) {
    throw invalidField("requests", `must hold at most ${MAX_INPUTS} requests (it holds ${requests.length})`);
  }
  let first: ReturnType<typeof settingsOf> | undefined;
  const inputs = requests.map((request, i) => {
    const field = `requests[${i}]`;
    if (!isObject(request)) throw invalidField(field, "must be an embedContent request");
    const settings = settingsOf(request, field);
    first ??= settings;
    for (const [name, key] of [["outputDimensionality", "dimensions"], ["taskType", "task"]] as const) {
      if (settings[key] !== first[key]) throw invalidField(`${field}.${name}`, "must be the same in every request");
    }
    return textOf(request.content, `${field}.content`);
  });
  return { model, inputs, encoding: "float", ...first };
}

/** The Gemini shape as an upstream speaks it. */
export const geminiEmbeddingShape: EmbeddingShape = {
  name: "gemini",
  batch: GEMINI_BATCH,
  tokenInputs: false,
  refusesDimensions: () => undefined,
  read(body, count) {
    const items = Array.isArray(body.embeddings) ? body.embeddings : isObject(body.embedding) ? [body.embedding] : [];
    const vectors = vectorsOf(items, count, (item) => isObject(item) ? item.values : undefined);
    if (!vectors) return undefined;
    // The Gemini API counts nothing; Vertex AI says `usageMetadata.promptTokenCount` (its statistics otherwise).
    const usage = isObject(body.usageMetadata) ? body.usageMetadata : undefined;
    return { vectors, tokens: usage ? tokenCount(usage.promptTokenCount) : undefined };
  },
};
