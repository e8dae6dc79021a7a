/**
 * @module The request-body checks per client protocol: only the fields the gateway reads are validated,
 * and every other field passes through untouched.
 */
import { z } from "zod";
import type { JsonObject, Protocol } from "./types.ts";
import { firstProblem, invalidField } from "./validation.ts";

const Message = z.looseObject({ role: z.string(), content: z.unknown().refine((v) => v !== undefined, "is required") });

const MessagesBody = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  messages: z.array(Message).min(1),
  stream: z.boolean().optional(),
});

const CountTokensBody = MessagesBody.omit({ max_tokens: true });

const ChatBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string() })).min(1),
  stream: z.boolean().nullish(),
});

const ResponsesBody = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({}))]),
  stream: z.boolean().nullish(),
});

// Gemini names the model in the path; the handler puts it (and whether to stream) into the body before this check.
const GeminiBody = z.looseObject({
  model: z.string().min(1),
  contents: z.array(z.looseObject({ role: z.string().optional(), parts: z.array(z.unknown()) })).min(1),
  stream: z.boolean().optional(),
});

/**
 * The operation a client asked for. `compact` is POST /v1/responses/compact when the model's upstreams compact on
 * their own (OpenAI's Responses API); its body is checked as a Responses create.
 */
export type Operation = "generate" | "count_tokens" | "compact";

const SCHEMAS: Partial<Record<`${Protocol}:${Operation}`, z.ZodType>> = {
  "anthropic:generate": MessagesBody,
  "anthropic:count_tokens": CountTokensBody,
  "openai-chat:generate": ChatBody,
  "openai-chat:count_tokens": undefined,
  "openai-responses:generate": ResponsesBody,
  "openai-responses:count_tokens": undefined,
  "gemini:generate": GeminiBody,
  "gemini:count_tokens": GeminiBody,
};

/** A JSON object that is not an array, as a zod object schema takes it. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function everyItem(value: unknown, check: (item: Record<string, unknown>) => boolean): boolean {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const item of value) if (!isRecord(item) || !check(item)) return false;
  return true;
}

const isModel = (body: JsonObject) => typeof body.model === "string" && body.model.length > 0;
const optionalFlag = (value: unknown) => value === undefined || typeof value === "boolean";
const isMessage = (m: Record<string, unknown>) => typeof m.role === "string" && m.content !== undefined;

// The schemas above copy every object and array they check, which on a long conversation is most of the check's cost.
// These say yes only to bodies their schema takes (and no to anything they are unsure of); a no goes to the schema,
// which names the field at fault.
const ACCEPTS: Partial<Record<`${Protocol}:${Operation}`, (body: JsonObject) => boolean>> = {
  "anthropic:generate": (b) =>
    isModel(b) && Number.isSafeInteger(b.max_tokens) && (b.max_tokens as number) > 0 &&
    everyItem(b.messages, isMessage) && optionalFlag(b.stream),
  "anthropic:count_tokens": (b) => isModel(b) && everyItem(b.messages, isMessage) && optionalFlag(b.stream),
  "openai-chat:generate": (b) =>
    isModel(b) && everyItem(b.messages, (m) => typeof m.role === "string") &&
    (b.stream === null || optionalFlag(b.stream)),
  "openai-chat:count_tokens": undefined,
  "openai-responses:generate": (b) =>
    isModel(b) && (typeof b.input === "string" || (Array.isArray(b.input) && b.input.every(isRecord))) &&
    (b.stream === null || optionalFlag(b.stream)),
  "openai-responses:count_tokens": undefined,
  "gemini:generate": undefined,
  "gemini:count_tokens": undefined,
};

/** The schema a body of `protocol` and `operation` is checked against, when it has one. */
export function bodySchema(protocol: Protocol, operation: Operation): z.ZodType | undefined {
  return SCHEMAS[`${protocol}:${operation}`];
}

/** Checks a request body and returns it unchanged; a failure is a 400 naming the field. */
export function checkBody(protocol: Protocol, operation: Operation, body: JsonObject): JsonObject {
  const schema = bodySchema(protocol, operation);
  if (!schema || ACCEPTS[`${protocol}:${operation}`]?.(body)) return body;
  const result = schema.safeParse(body);
  if (result.success) return body;
  const { field, message } = firstProblem(result.error, body);
  throw invalidField(field, message);
}
