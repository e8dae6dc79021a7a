/**
 * @module The demo upstream's answer to an Anthropic Messages request, decided from the request alone (see
 * docs/configuration.md, "The demo upstream"): a tool call when tools are offered, a text quoting the tool's result
 * once the conversation holds it, else a text quoting the last user message. Pure: the same request gets the same
 * answer.
 */
import { estimatePromptTokens, estimateTokens } from "../core/estimate.ts";
import { isObject, type JsonObject } from "../core/types.ts";

/** One content block of the answer. */
export type DemoBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: JsonObject };

/** The answer as the Messages API gives it, without its id and model. */
export interface DemoAnswer {
  content: DemoBlock[];
  stop_reason: "end_turn" | "tool_use" | "max_tokens";
  usage: { input_tokens: number; output_tokens: number };
}

/** The most characters of a user's message or a tool's result the answer quotes. */
const QUOTE_CHARS = 400;

/** Tools that list files come first, then tools that run a command with `ls`: both read and change nothing. */
const LISTS_FILES = /^(glob|ls|list_dir|list_directory|list_files)$/i;
const RUNS_COMMANDS = /^(bash|shell|shell_command|exec_command|run_shell_command|local_shell)$/i;

/** The answer to `body`; `toolUseId` names the tool call it makes, when it makes one. */
export function demoAnswer(body: JsonObject, toolUseId: string): DemoAnswer {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isObject) : [];
  const last = messages.at(-1);
  const results = last?.role === "user" ? blocksOf(last.content).filter((b) => b.type === "tool_result") : [];
  const tool = results.length === 0 ? chosenTool(body) : undefined;
  const content: DemoBlock[] = [];
  if (results.length > 0) content.push({ type: "text", text: resultText(results[0], messages) });
  else if (tool) {
    content.push({ type: "text", text: `I'll call ${tool.name} to show a tool call through the gateway.` });
    content.push({ type: "tool_use", id: toolUseId, name: tool.name, input: argumentsFor(tool.schema) });
  } else content.push({ type: "text", text: greeting(last) });
  return limited(content, body, tool !== undefined);
}

/** The blocks of a message's content (a string is one text block). */
function blocksOf(content: unknown): JsonObject[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** The text of a message's content or a tool result's content, its text blocks joined. */
function textOf(content: unknown): string {
  return blocksOf(content).filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text).join(
    "\n",
  );
}

function quote(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > QUOTE_CHARS ? `${flat.slice(0, QUOTE_CHARS)}...` : flat;
}

function greeting(last: JsonObject | undefined): string {
  const said = last?.role === "user" ? quote(textOf(last.content)) : "";
  return "Hello from modelgate's demo model. No provider was called: this answer comes from the gateway itself, " +
    `and the same request always gets it. You wrote: "${said}". Give an upstream its key and use one of its ` +
    "models for real answers.";
}

/** The text after a tool's result: it names the tool and quotes what it gave back. */
function resultText(result: JsonObject, messages: JsonObject[]): string {
  const name = messages.flatMap((m) => m.role === "assistant" ? blocksOf(m.content) : [])
    .find((b) => b.type === "tool_use" && b.id === result.tool_use_id)?.name;
  const tool = typeof name === "string" ? name : "the tool";
  const output = typeof result.content === "string" ? result.content : textOf(result.content);
  const verb = result.is_error === true ? "failed with" : "answered";
  return `${tool} ${verb}: "${quote(output)}". That was the demo model's whole tool loop; no provider was called.`;
}

/** The tool to call, or none: the one `tool_choice` names, else the first that lists files, runs a command, or any. */
function chosenTool(body: JsonObject): { name: string; schema: JsonObject } | undefined {
  const choice = isObject(body.tool_choice) ? body.tool_choice : {};
  if (choice.type === "none") return undefined;
  // Server tools (web search and the like) have no schema: the provider runs them, so the demo does not call them.
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter(isObject)
    .filter((t) => typeof t.name === "string" && isObject(t.input_schema))
    .map((t) => ({ name: t.name as string, schema: t.input_schema as JsonObject }));
  if (choice.type === "tool") return tools.find((t) => t.name === choice.name);
  return tools.find((t) => LISTS_FILES.test(t.name)) ?? tools.find((t) => RUNS_COMMANDS.test(t.name)) ?? tools[0];
}

/** Arguments that satisfy a tool's schema: its required properties only, each with a value that changes nothing. */
export function argumentsFor(schema: JsonObject): JsonObject {
  const value = valueFor(schema, "");
  return isObject(value) ? value : {};
}

function valueFor(schema: JsonObject, key: string): unknown {
  if ("const" in schema) return schema.const;
  if ("default" in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options) && isObject(options[0])) return valueFor(options[0], key);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "object" || (type === undefined && isObject(schema.properties))) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required.filter((k) => typeof k === "string") : [];
    return Object.fromEntries(
      required.map((name) => [name, valueFor(isObject(properties[name]) ? properties[name] : {}, name)]),
    );
  }
  if (type === "array") {
    // A command given as a list of words (Codex's shell tool) is one word here too.
    if (/^(command|cmd)$/i.test(key)) return ["ls"];
    const items = isObject(schema.items) ? schema.items : { type: "string" };
    return typeof schema.minItems === "number" && schema.minItems > 0 ? [valueFor(items, key)] : [];
  }
  if (type === "integer" || type === "number") return typeof schema.minimum === "number" ? schema.minimum : 1;
  if (type === "boolean") return false;
  if (type === "null") return null;
  return stringFor(key);
}

/** A string argument by its name: a pattern matches everything, a command lists the folder, a path is the folder. */
function stringFor(key: string): string {
  if (/^(pattern|glob)$/i.test(key)) return "*";
  if (/^(command|cmd)$/i.test(key)) return "ls";
  if (/path|dir|folder/i.test(key)) return ".";
  return "demo";
}

/**
 * The answer with its usage (about four characters a token, see docs/protocols.md, "Token estimates") and its text
 * cut to the request's `max_tokens`, as a model stops there.
 */
function limited(content: DemoBlock[], body: JsonObject, calls: boolean): DemoAnswer {
  const maxTokens = typeof body.max_tokens === "number" && body.max_tokens > 0 ? body.max_tokens : Infinity;
  let room = maxTokens * 4;
  let cut = false;
  const kept: DemoBlock[] = [];
  for (const block of content) {
    if (block.type === "tool_use") {
      if (!cut) kept.push(block);
      continue;
    }
    if (room <= 0) {
      cut = true;
      continue;
    }
    cut ||= block.text.length > room;
    kept.push({ type: "text", text: block.text.slice(0, room) });
    room -= block.text.length;
  }
  const chars = kept.reduce((n, b) => n + (b.type === "text" ? b.text.length : JSON.stringify(b.input).length), 0);
  return {
    content: kept,
    stop_reason: cut ? "max_tokens" : calls ? "tool_use" : "end_turn",
    usage: { input_tokens: Math.max(1, estimatePromptTokens(body)), output_tokens: Math.max(1, estimateTokens(chars)) },
  };
}
