/**
 * @module JSON Schema (as Claude Code, Codex and the SDKs write tool parameters) -> the Schema subset the Gemini API
 * accepts for function declarations (see docs/protocols.md, "Schemas Gemini accepts"): `$ref` inlined, `const` as a
 * one-value enum, `oneOf` and type lists as `anyOf`/`nullable`, keywords it refuses left out, and a 400 naming the
 * tool and the path for what cannot be expressed.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { unsupported } from "./shared.ts";

/** The keywords the Gemini API's Schema object has; anything else is refused by the real API with a 400. */
const KEPT = new Set([
  "description",
  "title",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
  "default",
  "example",
]);

/** `format` values the API takes, by type; other formats are only hints, and are left out. */
const FORMATS: Record<string, Set<string>> = {
  string: new Set(["enum", "date-time"]),
  integer: new Set(["int32", "int64"]),
  number: new Set(["float", "double"]),
};

const TYPES = new Set(["string", "number", "integer", "boolean", "array", "object"]);

/** Where a rewrite is, for its errors: the tool and the JSON path inside its schema. */
interface At {
  /** The request field that holds the schema, such as `tools[2].input_schema`. */
  field: string;
  /** The tool's name. */
  tool: string;
  path: string;
  root: JsonObject;
  /** `$ref`s being inlined above this point, to refuse a recursive one. */
  refs: string[];
}

function refused(at: At, message: string): never {
  throw unsupported(`${at.field}${at.path}`, `${message} (tool ${JSON.stringify(at.tool)})`);
}

/** The schema a local `$ref` (`#/$defs/X`, `#/definitions/X`, any JSON pointer into the root) points at. */
function resolve(ref: string, at: At): unknown {
  if (!ref.startsWith("#")) refused(at, `$ref ${JSON.stringify(ref)} points outside the schema`);
  if (at.refs.includes(ref)) refused(at, `$ref ${JSON.stringify(ref)} is recursive, which Gemini cannot express`);
  let node: unknown = at.root;
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    node = isObject(node) ? node[key] : undefined;
  }
  if (!isObject(node)) refused(at, `$ref ${JSON.stringify(ref)} points at nothing`);
  return node;
}

/** `allOf` parts merged into one schema: their properties and required lists joined. */
function mergeAll(parts: unknown[], at: At): JsonObject {
  const out: JsonObject = {};
  for (const part of parts) {
    const schema = isObject(part) && typeof part.$ref === "string" ? resolve(part.$ref, at) : part;
    if (!isObject(schema)) continue;
    for (const [key, value] of Object.entries(schema)) {
      if (key === "properties" && isObject(value)) out.properties = { ...(out.properties as JsonObject), ...value };
      else if (key === "required" && Array.isArray(value)) {
        out.required = [...new Set([...(out.required as string[] ?? []), ...value])];
      } else out[key] ??= value;
    }
  }
  return out;
}

/** One JSON Schema node as a Gemini Schema. */
function rewrite(node: unknown, at: At): JsonObject {
  if (node === true || node === undefined) return {};
  if (!isObject(node)) refused(at, "must be a schema object");
  if (typeof node.$ref === "string") {
    const { $ref, ...siblings } = node;
    const target = resolve($ref, at);
    return rewrite({ ...target as JsonObject, ...siblings }, { ...at, refs: [...at.refs, $ref] });
  }
  if (Array.isArray(node.allOf)) {
    const { allOf, ...rest } = node;
    return rewrite(mergeAll([rest, ...allOf], at), at);
  }
  const out: JsonObject = {};
  let type = node.type;
  let nullable = node.nullable === true;
  if (Array.isArray(type)) {
    nullable ||= type.includes("null");
    const kinds = type.filter((t) => t !== "null");
    type = kinds.length === 1 ? kinds[0] : undefined;
    if (kinds.length > 1) out.anyOf = kinds.map((kind) => rewrite({ ...node, type: kind }, at));
  }
  if (type === "null") {
    nullable = true;
    type = undefined;
  }
  if (typeof type === "string" && TYPES.has(type)) out.type = type.toUpperCase();
  for (const [key, value] of Object.entries(node)) if (KEPT.has(key)) out[key] = value;
  if (out.example === undefined && Array.isArray(node.examples) && node.examples.length > 0) {
    out.example = node.examples[0];
  }
  // An exclusive bound becomes an inclusive one: a hair looser, never stricter than the client asked.
  if (typeof node.exclusiveMinimum === "number" && out.minimum === undefined) out.minimum = node.exclusiveMinimum;
  if (typeof node.exclusiveMaximum === "number" && out.maximum === undefined) out.maximum = node.exclusiveMaximum;
  if (typeof node.format === "string" && FORMATS[String(type)]?.has(node.format)) out.format = node.format;
  const values = node.const !== undefined ? [node.const] : Array.isArray(node.enum) ? node.enum : undefined;
  if (values) enumOf(values, out, node);
  const union = node.anyOf ?? node.oneOf;
  if (Array.isArray(union)) {
    const branches = union.filter((b) => !(isObject(b) && b.type === "null"));
    if (branches.length < union.length) nullable = true;
    const rewritten = branches.map((b, i) => rewrite(b, { ...at, path: `${at.path}.anyOf[${i}]` }));
    if (rewritten.length === 1) Object.assign(out, rewritten[0]);
    else if (rewritten.length > 1) out.anyOf = rewritten;
  }
  if (nullable) out.nullable = true;
  if (isObject(node.properties)) properties(node, out, at);
  else if (Array.isArray(node.required) && node.required.length > 0) {
    refused(at, `required names ${JSON.stringify(node.required[0])} but the schema has no properties`);
  }
  if (node.items !== undefined) {
    const items = Array.isArray(node.items) ? { anyOf: node.items } : node.items;
    out.items = rewrite(items, { ...at, path: `${at.path}.items` });
  }
  return out;
}

/** An enum or const: Gemini's enums are strings; numbers pin a range, anything else only describes. */
function enumOf(values: unknown[], out: JsonObject, node: JsonObject): void {
  if (values.every((v) => typeof v === "string")) {
    out.enum = values;
    out.type ??= "STRING";
    if (out.type === "STRING") out.format = "enum";
  } else if (values.length === 1 && typeof values[0] === "number") {
    out.minimum = values[0];
    out.maximum = values[0];
  } else {
    const described = `One of: ${values.map((v) => JSON.stringify(v)).join(", ")}.`;
    out.description = typeof node.description === "string" ? `${node.description} ${described}` : described;
  }
}

/** Properties and `required`: every required name keeps a schema, so none is dropped on the way. */
function properties(node: JsonObject, out: JsonObject, at: At): void {
  const props = node.properties as JsonObject;
  out.properties = Object.fromEntries(
    Object.entries(props).map(([name, schema]) => [
      name,
      rewrite(schema, { ...at, path: `${at.path}.properties.${name}` }),
    ]),
  );
  const required = Array.isArray(node.required) ? node.required : [];
  for (const name of required) {
    if (typeof name !== "string" || !(name in props)) {
      refused(at, `required names ${JSON.stringify(name)}, which has no schema in properties`);
    }
  }
  if (required.length > 0) out.required = required;
  out.type ??= "OBJECT";
}

/** A tool's JSON Schema, found at `field`, as the Gemini `parameters` of the function `tool`. */
export function geminiSchema(schema: unknown, where: { field: string; tool: string }): JsonObject {
  const root = isObject(schema) ? schema : {};
  return rewrite(root, { ...where, path: "", root, refs: [] });
}
