/**
 * @module Freeform (`custom`) tools for upstreams that only know JSON functions: the function they are offered as
 * (one string parameter carrying the raw input, a description of what the input must look like), the raw input
 * read back out of the model's arguments, and OpenAI's own `custom` tool shape for upstreams that take it natively.
 */
import { isObject, type JsonObject } from "../core/types.ts";

/** The one parameter a freeform tool's function form takes. */
export const FREEFORM_PARAM = "input";

/** Longer grammars are not repeated in the description: they would cost more tokens than they help. */
const GRAMMAR_SHOWN_CHARS = 8000;

/** A freeform tool's input format, read from the Responses shape or the chat shape (`grammar` nested one deeper). */
interface InputFormat {
  syntax?: string;
  definition?: string;
}

function inputFormat(format: unknown): InputFormat {
  if (!isObject(format) || format.type !== "grammar") return {};
  const grammar = isObject(format.grammar) ? format.grammar : format;
  return {
    syntax: typeof grammar.syntax === "string" ? grammar.syntax : undefined,
    definition: typeof grammar.definition === "string" ? grammar.definition : undefined,
  };
}

/** The function description: the tool's own, then a few lines saying how the raw input travels and what it must match. */
export function freeformDescription(description: unknown, format: unknown): string {
  const lines = typeof description === "string" && description ? [description, ""] : [];
  lines.push(
    `This tool takes freeform text, not JSON arguments: put the whole text in the "${FREEFORM_PARAM}" string, exactly ` +
      "as the tool should receive it (newlines and quotes included, nothing wrapped around it).",
  );
  const { syntax, definition } = inputFormat(format);
  if (definition && definition.length <= GRAMMAR_SHOWN_CHARS) {
    const kind = syntax === "regex" ? "regular expression" : `${syntax ?? "lark"} grammar`;
    lines.push(`The text must match this ${kind}:`, definition);
  } else if (definition) lines.push(`The text must follow the tool's ${syntax ?? "lark"} grammar.`);
  return lines.join("\n");
}

/** The JSON Schema of the function form. */
export function freeformParameters(): JsonObject {
  return {
    type: "object",
    properties: { [FREEFORM_PARAM]: { type: "string", description: "The raw input text for the tool." } },
    required: [FREEFORM_PARAM],
    additionalProperties: false,
  };
}

/** The function form's arguments (a JSON string) for a raw input, e.g. for a call in the history. */
export function freeformArguments(input: unknown): string {
  return JSON.stringify({ [FREEFORM_PARAM]: typeof input === "string" ? input : "" });
}

/**
 * The raw input out of a model's call to the function form: its arguments as a JSON string (chat) or an object
 * (Anthropic). A model that named the parameter differently but gave one string still means that string; anything
 * else is handed over as the text the model wrote, for the tool to reject.
 */
export function freeformInput(args: unknown): string {
  let value = args;
  if (typeof args === "string") {
    try {
      value = JSON.parse(args);
    } catch {
      return args;
    }
  }
  if (!isObject(value)) return typeof args === "string" ? args : JSON.stringify(args ?? "");
  if (typeof value[FREEFORM_PARAM] === "string") return value[FREEFORM_PARAM] as string;
  if (Object.keys(value).length === 0) return "";
  const strings = Object.values(value).filter((v) => typeof v === "string") as string[];
  if (strings.length === 1 && Object.keys(value).length === 1) return strings[0];
  return typeof args === "string" ? args : JSON.stringify(value);
}

/** A Responses `custom` tool in the chat API's own `custom` shape, for an upstream that takes it as it is. */
export function chatCustomTool(name: string, description: unknown, format: unknown): JsonObject {
  const custom: JsonObject = { name };
  if (typeof description === "string") custom.description = description;
  const { syntax, definition } = inputFormat(format);
  if (definition) custom.format = { type: "grammar", grammar: { syntax: syntax ?? "lark", definition } };
  else if (isObject(format) && format.type === "text") custom.format = { type: "text" };
  return { type: "custom", custom };
}
