/**
 * @module The request-body check of each client protocol and operation, as its descriptor states it: only the
 * fields the gateway reads are validated, and every other field passes through untouched.
 */
import type { z } from "zod";
import type { JsonObject, Operation, Protocol } from "../core/types.ts";
import { firstProblem, invalidField } from "../core/validation.ts";
import { PROTOCOLS } from "./registry.ts";

/** The schema a body of `protocol` and `operation` is checked against, when it has one. */
export function bodySchema(protocol: Protocol, operation: Operation): z.ZodType | undefined {
  return PROTOCOLS[protocol].bodies[operation]?.schema;
}

/** Checks a request body and returns it unchanged; a failure is a 400 naming the field. */
export function checkBody(protocol: Protocol, operation: Operation, body: JsonObject): JsonObject {
  const check = PROTOCOLS[protocol].bodies[operation];
  if (!check || check.accepts?.(body)) return body;
  const result = check.schema.safeParse(body);
  if (result.success) return body;
  const { field, message } = firstProblem(result.error, body);
  throw invalidField(field, message);
}
