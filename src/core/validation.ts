/**
 * @module How a failed check names its place: one rendering of a field's path (`messages[0].role`, `models[1]`) for
 * request bodies, the admin API and the config alike, and the first problem of a failed check in plain words.
 */
import type { z } from "zod";
import { GatewayError } from "./errors.ts";

/** A path as people write it: `messages[0].role`, `groups[1].models[0]`; "" for the top level. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : `${out ? "." : ""}${String(key)}`;
  return out;
}

/** The most characters of a client's id an error message repeats. */
const SHOWN_ID = 64;

/**
 * A client's id as an error message shows it: whole when short, else its start and its length, so a huge id sent
 * back is not echoed whole (in every error event, log line and client log that repeats the message).
 */
export function shownId(id: string): string {
  return id.length <= SHOWN_ID ? id : `${id.slice(0, SHOWN_ID)}... (${id.length} characters)`;
}

/** A 400 naming the field at fault, both in its message and as OpenAI's `param` (with OpenAI's `code`, when given). */
export function invalidField(field: string, message: string, code?: string): GatewayError {
  return new GatewayError("invalid_request", `${field}: ${message}`, { param: field, code });
}

/** The value at a path in `input`, to tell a missing field from one of the wrong type. */
export function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** The field at fault and what is wrong with it. */
export interface Problem {
  /** The field's path; an unknown key is named as the field itself. "" for the top level. */
  field: string;
  message: string;
}

/** The first problem of a failed check of `input`, in the words a client or operator acts on. */
export function firstProblem(error: z.ZodError, input: unknown): Problem {
  return problemOf(error.issues[0], input);
}

/** What one issue of a failed check of `input` says, in the same words (the config's errors use it too). */
export function problemOf(issue: z.core.$ZodIssue, input: unknown): Problem {
  if (issue.code === "unrecognized_keys") {
    return { field: fieldPath([...issue.path, issue.keys[0]]), message: "is not a known field" };
  }
  const field = fieldPath(issue.path);
  if (issue.code === "invalid_type" && valueAt(input, issue.path) === undefined) {
    return { field, message: "is required" };
  }
  if (issue.code === "too_small" && issue.origin === "array" && issue.minimum === 1) {
    return { field, message: "must be a non-empty array" };
  }
  return { field, message: issue.message };
}
