/**
 * @module Anthropic Messages request -> OpenAI Chat Completions request (see docs/protocols.md, "Anthropic
 * Messages client, chat upstream").
 */
import { createHash } from "node:crypto";
import { isObject, type JsonObject } from "../core/types.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import {
  clampMaxTokens,
  effortFromBudget,
  imageUrlFromSource,
  joinText,
  sanitizeToolId,
  type ToolNames,
} from "./shared.ts";

type ChatMessage = JsonObject;

/** Text of an Anthropic `system` (string or text blocks); cache_control has no OpenAI meaning and is dropped. */
function systemText(system: unknown): string {
  return joinText(system);
}

/** A user content block as a chat content part, or undefined when chat cannot carry it. */
function userPart(block: JsonObject, ctx: TranslateContext): JsonObject | undefined {
  if (block.type === "text") return block.text ? { type: "text", text: block.text } : undefined;
  if (block.type === "image") {
    const url = imageUrlFromSource(block.source);
    if (url) return { type: "image_url", image_url: { url } };
  }
  if (block.type === "document" && isObject(block.source)) {
    const source = block.source;
    if (source.type === "text" && typeof source.data === "string") return { type: "text", text: source.data };
    if (source.type === "base64") {
      const filename = typeof block.title === "string" ? block.title : "document.pdf";
      return { type: "file", file: { filename, file_data: `data:${source.media_type};base64,${source.data}` } };
    }
  }
  logDrop(ctx, { field: `content.${String(block.type)}`, reason: "no chat equivalent" });
  return undefined;
}

/** Parts that are all text collapse to one string, which every OpenAI-compatible server accepts. */
function userContent(parts: JsonObject[]): unknown {
  if (parts.every((part) => part.type === "text")) return parts.map((part) => part.text).join("\n");
  return parts;
}

/** A tool_result's content as the text of a tool message; `is_error` has no field, so it prefixes the text. */
function toolResultText(block: JsonObject, ctx: TranslateContext): string {
  if (Array.isArray(block.content) && block.content.some((part) => isObject(part) && part.type !== "text")) {
    logDrop(ctx, { field: "content.tool_result.content", reason: "tool messages carry text only" });
  }
  const text = joinText(block.content);
  return block.is_error === true ? `Error: ${text}` : text;
}

/** One user turn: tool results become tool messages first (they answer the previous assistant turn). */
function userMessages(content: unknown, ctx: TranslateContext): ChatMessage[] {
  if (typeof content === "string") return [{ role: "user", content }];
  if (!Array.isArray(content)) return [];
  const tools: ChatMessage[] = [];
  const parts: JsonObject[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block.type === "tool_result") {
      const id = sanitizeToolId(block.tool_use_id, "toolu_missing");
      tools.push({ role: "tool", tool_call_id: id, content: toolResultText(block, ctx) });
      continue;
    }
    const part = userPart(block, ctx);
    if (part) parts.push(part);
  }
  return parts.length > 0 ? [...tools, { role: "user", content: userContent(parts) }] : tools;
}

/** One assistant turn: text, tool calls, and thinking echoed as `reasoning_content` for upstreams that want it. */
function assistantMessage(content: unknown, names: ToolNames, ctx: TranslateContext): ChatMessage | undefined {
  if (typeof content === "string") return content ? { role: "assistant", content } : undefined;
  if (!Array.isArray(content)) return undefined;
  const texts: string[] = [];
  const reasoning: string[] = [];
  const toolCalls: JsonObject[] = [];
  for (const block of content) {
    if (!isObject(block)) continue;
    if (block.type === "text" && typeof block.text === "string") texts.push(block.text);
    else if (block.type === "thinking" && typeof block.thinking === "string") reasoning.push(block.thinking);
    else if (block.type === "tool_use") {
      toolCalls.push({
        id: sanitizeToolId(block.id, `toolu_${toolCalls.length}`),
        type: "function",
        function: { name: names.toUpstream(String(block.name)), arguments: JSON.stringify(block.input ?? {}) },
      });
    } else if (block.type !== "redacted_thinking") {
      logDrop(ctx, { field: `content.${String(block.type)}`, reason: "no chat equivalent" });
    }
  }
  const text = texts.filter((t) => t !== "").join("\n");
  if (!text && toolCalls.length === 0) return undefined;
  const message: ChatMessage = { role: "assistant", content: text || null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning.length > 0) message.reasoning_content = reasoning.join("\n");
  return message;
}

/** Custom tools become functions; Anthropic server tools have no chat form and are dropped with a log line. */
function chatTools(tools: unknown, names: ToolNames, ctx: TranslateContext): JsonObject[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  const out: JsonObject[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) continue;
    if (tool.type !== undefined && tool.type !== "custom" || !isObject(tool.input_schema)) {
      logDrop(ctx, { field: "tools", tool: String(tool.name ?? tool.type), reason: "server tool" });
      continue;
    }
    const fn: JsonObject = { name: names.toUpstream(String(tool.name)), parameters: tool.input_schema };
    if (typeof tool.description === "string") fn.description = tool.description;
    out.push({ type: "function", function: fn });
  }
  return out.length > 0 ? out : undefined;
}

/** `tool_choice`: auto/any/tool/none -> "auto"/"required"/named/"none". */
function chatToolChoice(choice: unknown, names: ToolNames): unknown {
  if (!isObject(choice)) return undefined;
  if (choice.type === "any") return "required";
  if (choice.type === "none") return "none";
  if (choice.type === "tool") return { type: "function", function: { name: names.toUpstream(String(choice.name)) } };
  return "auto";
}

/** The longest `user` every OpenAI-compatible service takes: OpenAI refuses more than 64 characters (OpenRouter 128). */
const MAX_CHAT_USER = 64;

/**
 * The OpenAI `user` (chat or Responses) for an Anthropic `metadata.user_id`: unchanged when it fits, else `user_` and 40 hex digits of its
 * SHA-256, the same for every request. Claude Code's user id is a JSON string of about 150 characters (its user,
 * account and session), which OpenAI would refuse with a 400 on every request; the digest still tells users apart.
 */
export function safeUserId(userId: string): string | undefined {
  if (userId === "") return undefined;
  if (userId.length <= MAX_CHAT_USER) return userId;
  return `user_${createHash("sha256").update(userId).digest("hex").slice(0, 40)}`;
}

/** Builds the chat request; unknown Anthropic-only fields (betas, context management, cache hints) are dropped. */
export function messagesToChatRequest(
  body: JsonObject,
  { names, ctx }: { names: ToolNames; ctx: TranslateContext },
): JsonObject {
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({ role: "system", content: system });
  for (const message of body.messages as JsonObject[]) {
    if (message.role === "system") {
      const text = joinText(message.content);
      if (text) messages.push({ role: "system", content: text });
    } else if (message.role === "assistant") {
      const out = assistantMessage(message.content, names, ctx);
      if (out) messages.push(out);
    } else messages.push(...userMessages(message.content, ctx));
  }
  const out: JsonObject = {
    model: ctx.upstreamModel,
    messages,
    [ctx.maxTokensField ?? "max_tokens"]: clampMaxTokens(body.max_tokens, ctx.maxOutputTokens),
  };
  const tools = chatTools(body.tools, names, ctx);
  if (tools) {
    out.tools = tools;
    const choice = chatToolChoice(body.tool_choice, names);
    if (choice !== undefined) out.tool_choice = choice;
    if (isObject(body.tool_choice) && body.tool_choice.disable_parallel_tool_use === true) {
      out.parallel_tool_calls = false;
    }
  }
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) out.stop = body.stop_sequences;
  for (const field of ["temperature", "top_p"]) if (typeof body[field] === "number") out[field] = body[field];
  if (isObject(body.metadata) && typeof body.metadata.user_id === "string") {
    const user = safeUserId(body.metadata.user_id);
    if (user) out.user = user;
  }
  const effort = effortFromBudget(body.thinking);
  if (effort && ctx.reasoningEffort) out.reasoning_effort = effort;
  else if (effort) {
    logDrop(ctx, { field: "thinking", reason: "upstream has no reasoning_effort" });
  }
  if (body.stream === true) {
    out.stream = true;
    // Without it most upstreams send no usage at all (see docs/protocols.md, "Chat Completions streams").
    out.stream_options = { include_usage: true };
  }
  return out;
}
