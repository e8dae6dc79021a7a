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

/** The operation a client asked for. */
export type Operation = "generate" | "count_tokens";

const SCHEMAS: Record<`${Protocol}:${Operation}`, z.ZodType | undefined> = {
  "anthropic:generate": MessagesBody,
  "anthropic:count_tokens": CountTokensBody,
  "openai-chat:generate": ChatBody,
  "openai-chat:count_tokens": undefined,
  "openai-responses:generate": ResponsesBody,
  "openai-responses:count_tokens": undefined,
  "gemini:generate": GeminiBody,
  "gemini:count_tokens": GeminiBody,
};

/** Checks a request body and returns it unchanged; a failure is a 400 naming the field. */
export function checkBody(protocol: Protocol, operation: Operation, body: JsonObject): JsonObject {
  const schema = SCHEMAS[`${protocol}:${operation}`];
  if (!schema) return body;
  const result = schema.safeParse(body);
  if (result.success) return body;
  const { field, message } = firstProblem(result.error, body);
  throw invalidField(field, message);
}
