/**
 * @module A Responses request's tools as an upstream can take them: function tools as they are, freeform (`custom`)
 * tools as one-string functions (or natively, for an upstream that takes them), `namespace` tools flattened into
 * names the upstream accepts, provider-only tools dropped with a log line; the map back from an upstream's tool
 * name to the client's tool, so calls return under their original kind, namespace and name; and the history's call
 * items under the same names, with the tool calls no upstream can take refused rather than lost.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { chatCustomTool, freeformArguments, freeformDescription, freeformParameters } from "./freeform_tools.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import { joinText, sanitizeToolId, shortenToolName, unsupported } from "./shared.ts";

/** A tool as the client knows it. */
export interface ClientTool {
  name: string;
  namespace?: string;
  /** A freeform tool: its calls go back as `custom_tool_call` items carrying the raw `input`. */
  custom: boolean;
}

/** A tool as offered upstream: a JSON function, or (`native`) the chat API's own `custom` tool. */
export interface OfferedTool {
  name: string;
  description?: string;
  parameters: JsonObject;
  strict?: boolean;
  native?: JsonObject;
}

/** What both directions of one Responses translation share: the context and the request's tools. */
export interface ResponsesState {
  ctx: TranslateContext;
  tools: ResponsesTools;
}

/** The request's tools both ways. */
export interface ResponsesTools {
  offered: OfferedTool[];
  /** Whether freeform calls travel as the chat API's `custom` calls rather than as functions. */
  native: boolean;
  /** The upstream's name for a client tool, for history items and `tool_choice`. */
  upstreamName(name: unknown, namespace?: unknown): string;
  /** The client's tool behind a name the upstream used; a name the request did not offer is a plain function. */
  clientTool(upstreamName: string): ClientTool;
}

/** Logs something the upstream cannot take; one line per dropped thing. */
export function dropped(ctx: TranslateContext, field: string, what: unknown, reason = "no equivalent upstream"): void {
  logDrop(ctx, { field, type: String(what), reason });
}

/**
 * The flat name of a tool: `namespace__name` when namespaced, made to fit `^[a-zA-Z0-9_-]{1,64}$` (which both
 * Anthropic and OpenAI accept) by the same stable shortening as long names, so history keeps matching.
 */
export function flatToolName(name: unknown, namespace?: unknown): string {
  const base = String(name ?? "");
  return shortenToolName(typeof namespace === "string" && namespace ? `${namespace}__${base}` : base);
}

/** One function or custom tool (top level or inside a namespace) as offered upstream. */
function offer(tool: JsonObject, client: ClientTool, prefix: string, native: boolean): OfferedTool {
  const name = flatToolName(client.name, client.namespace);
  const description = [prefix, typeof tool.description === "string" ? tool.description : ""].filter(Boolean)
    .join("\n\n");
  if (client.custom && native) {
    return { name, parameters: {}, native: chatCustomTool(name, description || undefined, tool.format) };
  }
  if (client.custom) {
    return { name, description: freeformDescription(description, tool.format), parameters: freeformParameters() };
  }
  const out: OfferedTool = {
    name,
    parameters: isObject(tool.parameters) ? tool.parameters : { type: "object", properties: {} },
  };
  if (description) out.description = description;
  if (typeof tool.strict === "boolean") out.strict = tool.strict;
  return out;
}

/** Reads a Responses request's `tools`; `native` keeps freeform tools as chat `custom` tools. */
export function responsesTools(tools: unknown, ctx: TranslateContext, native = false): ResponsesTools {
  const offered: OfferedTool[] = [];
  const byUpstream = new Map<string, ClientTool>();

  function add(tool: JsonObject, where: string, namespace?: JsonObject): void {
    if ((tool.type !== "function" && tool.type !== "custom") || typeof tool.name !== "string" || !tool.name) {
      dropped(ctx, "tools", namespace ? `${namespace.name}.${tool.type}` : tool.type, "only its provider runs it");
      return;
    }
    const client: ClientTool = { name: tool.name, custom: tool.type === "custom" };
    if (namespace) client.namespace = String(namespace.name);
    const prefix = typeof namespace?.description === "string" ? namespace.description : "";
    const out = offer(tool, client, prefix, native);
    const taken = byUpstream.get(out.name);
    if (taken) {
      const other = taken.namespace ? `${taken.namespace}.${taken.name}` : taken.name;
      throw unsupported(where, `its upstream name "${out.name}" is already used by the tool "${other}"`);
    }
    byUpstream.set(out.name, client);
    offered.push(out);
  }

  (Array.isArray(tools) ? tools : []).forEach((tool, i) => {
    if (!isObject(tool)) return;
    if (tool.type === "namespace" && typeof tool.name === "string" && Array.isArray(tool.tools)) {
      tool.tools.forEach((inner, j) => {
        if (isObject(inner)) add(inner, `tools[${i}].tools[${j}]`, tool);
      });
    } else add(tool, `tools[${i}]`);
  });

  return {
    offered,
    native,
    upstreamName: flatToolName,
    clientTool: (name) => byUpstream.get(name) ?? { name, custom: false },
  };
}

/** The upstream's name for a Responses `tool_choice` naming one tool, or undefined for the string forms. */
export function chosenTool(choice: unknown, tools: ResponsesTools): string | undefined {
  if (!isObject(choice) || (choice.type !== "function" && choice.type !== "custom")) return undefined;
  return typeof choice.name === "string" ? tools.upstreamName(choice.name, choice.namespace) : undefined;
}

/** Tool calls and their outputs of kinds no upstream here can take (shell, computer, web search, MCP...). */
const TOOL_ITEM = /(_call|_output)$|^mcp_/;

/**
 * An item neither translation carries: a tool call or output is refused (leaving it out would show the model a
 * conversation in which it never happened); anything else is dropped with a log line.
 */
export function untranslatable(item: JsonObject, index: number, ctx: TranslateContext): void {
  if (TOOL_ITEM.test(String(item.type))) {
    throw unsupported(`input[${index}]`, `a "${item.type}" item cannot be sent to this model's upstream`);
  }
  dropped(ctx, "input", item.type);
}

/** A call item of the history (`function_call` or `custom_tool_call`) under the upstream's name. */
export interface HistoryCall {
  /** The client's call id, made safe (`^[a-zA-Z0-9_-]+$`) as its output item's is, so the two still pair up. */
  id: string;
  name: string;
  /** The raw input of a freeform call. */
  input?: string;
  /** JSON arguments: a function's own, or a freeform call's function form. */
  arguments: string;
}

/** A `function_call` or `custom_tool_call` of the history under the upstream's name, with its arguments. */
export function historyCall(item: JsonObject, tools: ResponsesTools): HistoryCall {
  const name = tools.upstreamName(item.name, item.namespace);
  const id = sanitizeToolId(item.call_id, "call_missing");
  if (item.type !== "custom_tool_call") {
    return { id, name, arguments: typeof item.arguments === "string" ? item.arguments : "" };
  }
  const input = typeof item.input === "string" ? item.input : "";
  return { id, name, input, arguments: freeformArguments(input) };
}

/** History items that are calls, and the items that answer them. */
export const CALL_ITEMS = new Set(["function_call", "custom_tool_call"]);
export const OUTPUT_ITEMS = new Set(["function_call_output", "custom_tool_call_output"]);

/** A history call as a chat tool call; freeform calls stay `custom` for an upstream that takes them natively. */
export function chatCall(call: HistoryCall, tools: ResponsesTools): JsonObject {
  if (call.input !== undefined && tools.native) {
    return { id: call.id, type: "custom", custom: { name: call.name, input: call.input } };
  }
  return { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } };
}

/** Fields with no meaning once the request leaves the Responses API; `previous_response_id` is refused. */
export function checkUnsupported(body: JsonObject): void {
  if (typeof body.previous_response_id === "string" && body.previous_response_id) {
    throw unsupported(
      "previous_response_id",
      "is not supported for this model; send the whole conversation in input (as with store:false)",
    );
  }
}

/** `input` as a list of items with their place in it; a string is one user message, role-only items are messages. */
export function inputItems(body: JsonObject): [JsonObject, number][] {
  if (typeof body.input === "string") return [[{ type: "message", role: "user", content: body.input }, 0]];
  return (body.input as unknown[]).flatMap((item, i): [JsonObject, number][] =>
    !isObject(item)
      ? []
      : [[item.type === undefined && typeof item.role === "string" ? { ...item, type: "message" } : item, i]]
  );
}

/** A function_call_output's `output` (string or content parts) as text. */
export function outputText(output: unknown): string {
  return typeof output === "string" ? output : joinText(output);
}
