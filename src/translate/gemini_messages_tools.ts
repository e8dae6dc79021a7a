/**
 * @module Gemini tools -> Anthropic tools: function declarations (OpenAPI-style `parameters` or
 * `parametersJsonSchema`) and `toolConfig.functionCallingConfig` (see docs/protocols.md, "Gemini client, Anthropic
 * or chat upstream").
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTool } from "./anthropic_turns.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import { unsupported } from "./shared.ts";

/**
 * A Gemini `Schema` (OpenAPI 3.0 subset: upper-case `type` names, `nullable`) as JSON Schema. Keys it does not
 * know pass as they are; both spell `properties`, `items`, `enum`, `required`, `anyOf` and `description` alike.
 */
export function jsonSchemaOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchemaOf);
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "nullable" || key === "propertyOrdering") continue;
    if (key === "type" && typeof value === "string") out.type = value.toLowerCase();
    else if (key === "properties" && isObject(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, jsonSchemaOf(inner)]));
    } else if (key === "items" || key === "anyOf") out[key] = jsonSchemaOf(value);
    else out[key] = value;
  }
  if (schema.nullable === true && typeof out.type === "string") out.type = [out.type, "null"];
  return out;
}

/** Gemini `tools` as Anthropic tools; tools only Google runs (search, code execution, URL context) are dropped. */
export function geminiTools(tools: unknown, ctx: TranslateContext): JsonObject[] | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw unsupported("tools", "must be an array");
  const out: JsonObject[] = [];
  tools.forEach((tool, i) => {
    if (!isObject(tool)) throw unsupported(`tools[${i}]`, "must be an object");
    for (const kind of Object.keys(tool)) {
      if (kind !== "functionDeclarations") {
        logDrop(ctx, { field: `tools[${i}].${kind}`, reason: "not a function tool" });
      }
    }
    const declarations = tool.functionDeclarations ?? [];
    if (!Array.isArray(declarations)) throw unsupported(`tools[${i}].functionDeclarations`, "must be an array");
    declarations.forEach((fn, j) => {
      const path = `tools[${i}].functionDeclarations[${j}]`;
      if (!isObject(fn) || typeof fn.name !== "string" || !fn.name) throw unsupported(`${path}.name`, "is required");
      const schema = fn.parametersJsonSchema ?? jsonSchemaOf(fn.parameters);
      out.push(anthropicTool(fn.name, schema, fn.description));
    });
  });
  return out.length > 0 ? out : undefined;
}

/** `toolConfig.functionCallingConfig` as an Anthropic `tool_choice`: AUTO, ANY (one allowed name: that tool), NONE. */
export function geminiToolChoice(config: unknown): JsonObject | undefined {
  const calling = isObject(config) && isObject(config.functionCallingConfig) ? config.functionCallingConfig : {};
  const allowed = Array.isArray(calling.allowedFunctionNames) ? calling.allowedFunctionNames : [];
  switch (calling.mode) {
    case "ANY":
      return allowed.length === 1 ? { type: "tool", name: allowed[0] } : { type: "any" };
    case "NONE":
      return { type: "none" };
    case "AUTO":
    case "VALIDATED":
      return { type: "auto" };
    default:
      return undefined;
  }
}
