/**
 * @module Anthropic Messages request -> OpenAI Responses request (see docs/protocols.md, "Anthropic Messages client,
 * Responses upstream"), with the provider's reasoning items, carried in thinking blocks, put back where they were.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import { safeUserId } from "./messages_chat_request.ts";
import { reasoningItemIn } from "./responses_reasoning.ts";
import {
  clampMaxTokens,
  effortFromBudget,
  imageUrlFromSource,
  joinText,
  sanitizeToolId,
  type ToolNames,
} from "./shared.ts";

/** A user block as a Responses content part, or undefined (logged) when the API cannot take it. */
function inputPart(block: JsonObject, ctx: TranslateContext): JsonObject | undefined {
  if (block.type === "text") return block.text ? { type: "input_text", text: block.text } : undefined;
  const source = isObject(block.source) ? block.source : {};
  if (block.type === "image") {
    const url = imageUrlFromSource(source);
    if (url) return { type: "input_image", image_url: url, detail: "auto" };
  }
  if (block.type === "document") {
    if (source.type === "text" && typeof source.data === "string") return { type: "input_text", text: source.data };
    const filename = typeof block.title === "string" && block.title ? block.title : "document.pdf";
    if (source.type === "base64") {
      return { type: "input_file", filename, file_data: `data:${source.media_type};base64,${source.data}` };
    }
    if (source.type === "url" && typeof source.url === "string") return { type: "input_file", file_url: source.url };
  }
  logDrop(ctx, { field: `content.${String(block.type)}`, reason: "no Responses equivalent" });
  return undefined;
}

/** A tool_result as the call's output: text as a string, text with images as parts; `is_error` prefixes `Error:`. */
function callOutput(block: JsonObject, ctx: TranslateContext): JsonObject {
  const call_id = sanitizeToolId(block.tool_use_id, "toolu_missing");
  const error = block.is_error === true;
  const blocks = Array.isArray(block.content) ? block.content.filter(isObject) : [];
  if (!blocks.some((part) => part.type !== "text")) {
    const text = joinText(block.content);
    return { type: "function_call_output", call_id, output: error ? `Error: ${text}` : text };
  }
  const parts = blocks.flatMap((part) => {
    if (part.type === "text" || part.type === "image") return [inputPart(part, ctx)].filter((p) => p !== undefined);
    logDrop(ctx, {
      field: "content.tool_result.content",
      type: String(part.type),
      reason: "outputs carry text and images",
    });
    return [];
  });
  return {
    type: "function_call_output",
    call_id,
    output: error ? [{ type: "input_text", text: "Error:" }, ...parts] : parts,
  };
}

/** The content of a message as blocks; a string is one text block. */
function blocksOf(content: unknown): JsonObject[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** One user turn: tool outputs first (they answer the previous turn's calls), then a message of the rest. */
function userItems(content: unknown, ctx: TranslateContext): JsonObject[] {
  const outputs: JsonObject[] = [];
  const parts: JsonObject[] = [];
  for (const block of blocksOf(content)) {
    if (block.type === "tool_result") outputs.push(callOutput(block, ctx));
    else {
      const part = inputPart(block, ctx);
      if (part) parts.push(part);
    }
  }
  return parts.length > 0 ? [...outputs, { type: "message", role: "user", content: parts }] : outputs;
}

/** Per request: whether thinking that cannot go back (another upstream's) was left out, to log it once. */
interface History {
  ctx: TranslateContext;
  names: ToolNames;
  foreignThinking: boolean;
}

/** One assistant turn in order: text as messages, calls as function calls, the provider's reasoning as its items. */
function assistantItems(content: unknown, history: History): JsonObject[] {
  const items: JsonObject[] = [];
  let texts: JsonObject[] = [];
  const flush = () => {
    if (texts.length > 0) items.push({ type: "message", role: "assistant", content: texts });
    texts = [];
  };
  for (const block of blocksOf(content)) {
    if (block.type === "text") {
      if (typeof block.text === "string" && block.text) texts.push({ type: "output_text", text: block.text });
    } else if (block.type === "tool_use") {
      flush();
      items.push({
        type: "function_call",
        call_id: sanitizeToolId(block.id, `toolu_${items.length}`),
        name: history.names.toUpstream(String(block.name)),
        arguments: JSON.stringify(isObject(block.input) ? block.input : {}),
      });
    } else if (block.type === "thinking" || block.type === "redacted_thinking") {
      const item = reasoningItemIn(block);
      if (item) {
        flush();
        items.push(item);
      } else history.foreignThinking = true;
    } else logDrop(history.ctx, { field: `content.${String(block.type)}`, reason: "no Responses equivalent" });
  }
  flush();
  return items;
}

/** Custom tools become flat function tools; Anthropic server tools have no Responses form and are dropped. */
function functionTools(tools: unknown, names: ToolNames, ctx: TranslateContext): JsonObject[] {
  const out: JsonObject[] = [];
  for (const tool of Array.isArray(tools) ? tools.filter(isObject) : []) {
    if (tool.type !== undefined && tool.type !== "custom" || !isObject(tool.input_schema)) {
      logDrop(ctx, { field: "tools", tool: String(tool.name ?? tool.type), reason: "server tool" });
      continue;
    }
    // `strict` defaults to true on this API, which refuses most schemas clients write; Anthropic's tools are not strict.
    const fn: JsonObject = { type: "function", name: names.toUpstream(String(tool.name)) };
    if (typeof tool.description === "string") fn.description = tool.description;
    out.push({ ...fn, parameters: tool.input_schema, strict: false });
  }
  return out;
}

/** `tool_choice`: auto/any/tool/none -> "auto"/"required"/the named function/"none". */
function toolChoice(choice: unknown, names: ToolNames): unknown {
  if (!isObject(choice)) return undefined;
  if (choice.type === "any") return "required";
  if (choice.type === "none") return "none";
  if (choice.type === "tool") return { type: "function", name: names.toUpstream(String(choice.name)) };
  return "auto";
}

/** Efforts the Responses API takes from an Anthropic `output_config.effort` as they are. */
const EFFORTS = new Set(["low", "medium", "high"]);

/**
 * Thinking as `reasoning`: the effort from `output_config.effort` when it names one, else from the budget; a summary
 * to show as the thinking text unless the client asked for none (`display: "omitted"`).
 */
function reasoningOf(body: JsonObject): JsonObject | undefined {
  const budgeted = effortFromBudget(body.thinking);
  if (!budgeted) return undefined;
  const asked = isObject(body.output_config) ? body.output_config.effort : undefined;
  const effort = typeof asked === "string" && EFFORTS.has(asked) ? asked : budgeted;
  const omitted = isObject(body.thinking) && body.thinking.display === "omitted";
  return omitted ? { effort } : { effort, summary: "auto" };
}

/** Builds the Responses request; Anthropic-only fields (betas, cache hints, context management) are dropped. */
export function messagesToResponsesRequest(body: JsonObject, ctx: TranslateContext, names: ToolNames): JsonObject {
  const history: History = { ctx, names, foreignThinking: false };
  const input: JsonObject[] = [];
  for (const message of Array.isArray(body.messages) ? body.messages.filter(isObject) : []) {
    if (message.role === "assistant") input.push(...assistantItems(message.content, history));
    else if (message.role === "system") {
      const text = joinText(message.content);
      if (text) input.push({ type: "message", role: "system", content: [{ type: "input_text", text }] });
    } else input.push(...userItems(message.content, ctx));
  }
  if (history.foreignThinking) {
    logDrop(ctx, { field: "messages[].content[]", type: "thinking", reason: "not this upstream's reasoning" });
  }
  // The gateway keeps nothing for a Messages client: the reasoning travels in the thinking blocks instead.
  const out: JsonObject = { model: ctx.upstreamModel, input, store: false };
  const instructions = joinText(body.system);
  if (instructions) out.instructions = instructions;
  const tools = functionTools(body.tools, names, ctx);
  if (tools.length > 0) {
    out.tools = tools;
    const choice = toolChoice(body.tool_choice, names);
    if (choice !== undefined) out.tool_choice = choice;
    if (isObject(body.tool_choice) && body.tool_choice.disable_parallel_tool_use === true) {
      out.parallel_tool_calls = false;
    }
  }
  const max = clampMaxTokens(body.max_tokens, ctx.maxOutputTokens);
  if (max !== undefined) out.max_output_tokens = max;
  const reasoning = reasoningOf(body);
  if (reasoning) {
    out.reasoning = reasoning;
    out.include = ["reasoning.encrypted_content"];
  } else {
    // Reasoning models refuse sampling settings; a request that asks for reasoning is for one of those.
    for (const field of ["temperature", "top_p"]) if (typeof body[field] === "number") out[field] = body[field];
  }
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) {
    logDrop(ctx, { field: "stop_sequences", reason: "no Responses equivalent" });
  }
  if (isObject(body.metadata) && typeof body.metadata.user_id === "string") {
    const user = safeUserId(body.metadata.user_id);
    if (user) out.user = user;
  }
  if (body.stream === true) out.stream = true;
  return out;
}
