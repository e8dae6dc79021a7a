/**
 * @module OpenAI Chat Completions request -> Anthropic Messages request (see docs/protocols.md,
 * "Chat Completions client, Anthropic upstream").
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTool, anthropicToolChoice, anthropicTurns, textBlocks, toolResult } from "./anthropic_turns.ts";
import { FREEFORM_PARAM, freeformDescription, freeformParameters } from "./freeform_tools.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import {
  anthropicImage,
  clampMaxTokens,
  joinText,
  parseDataUrl,
  parseToolArguments,
  sanitizeToolId,
  thinkingFromEffort,
  unsupported,
} from "./shared.ts";

/** A chat content part as an Anthropic block, or undefined (logged) when Anthropic cannot take it. */
function partBlock(part: JsonObject, ctx: TranslateContext): JsonObject | undefined {
  if (part.type === "text") return textBlocks(typeof part.text === "string" ? part.text : "")[0];
  if (part.type === "image_url") {
    const image = isObject(part.image_url) ? part.image_url : {};
    if (typeof image.url === "string") return anthropicImage(image.url);
  }
  if (part.type === "file" && isObject(part.file) && typeof part.file.file_data === "string") {
    const file = parseDataUrl(part.file.file_data);
    if (file) return { type: "document", source: { type: "base64", media_type: file.mediaType, data: file.data } };
  }
  logDrop(ctx, { field: `messages.content.${String(part.type)}`, reason: "no Anthropic form" });
  return undefined;
}

/** A chat message's content (string or parts) as Anthropic blocks. */
function contentBlocks(content: unknown, ctx: TranslateContext): JsonObject[] {
  if (typeof content === "string") return textBlocks(content);
  if (!Array.isArray(content)) return [];
  return content.filter(isObject).map((part) => partBlock(part, ctx)).filter((b) => b !== undefined);
}

/** The names of a chat request's freeform (`custom`) tools, whose calls go back to the client as `custom` calls. */
export function freeformNames(tools: unknown): Set<string> {
  const custom = Array.isArray(tools) ? tools.filter((t) => isObject(t) && t.type === "custom") as JsonObject[] : [];
  return new Set(custom.map((tool) => isObject(tool.custom) ? String(tool.custom.name) : ""));
}

/** Function tools become Anthropic tools, and freeform (`custom`) tools functions of one string; others are dropped. */
function anthropicTools(tools: unknown, ctx: TranslateContext): JsonObject[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  const out: JsonObject[] = [];
  for (const tool of tools.filter(isObject)) {
    const fn = isObject(tool.function) ? tool.function : undefined;
    if (tool.type === "custom" && isObject(tool.custom)) {
      const { name, description, format } = tool.custom;
      out.push(anthropicTool(name, freeformParameters(), freeformDescription(description, format)));
      continue;
    }
    if (tool.type !== "function" || !fn) {
      logDrop(ctx, { field: "tools", tool: String(tool.type), reason: "not a function tool" });
      continue;
    }
    out.push(anthropicTool(fn.name, fn.parameters, fn.description));
  }
  return out.length > 0 ? out : undefined;
}

/**
 * True when an assistant turn calls a tool without thinking first: with thinking on, the real API refuses such a
 * history ("a final assistant message must start with a thinking block"), and OpenAI clients cannot send one back.
 */
export function hasUnthoughtToolUse(messages: unknown[]): boolean {
  return messages.some((m) => {
    if (!isObject(m) || m.role !== "assistant" || !Array.isArray(m.content)) return false;
    const first = m.content[0];
    const thought = isObject(first) && (first.type === "thinking" || first.type === "redacted_thinking");
    return !thought && m.content.some((block) => isObject(block) && block.type === "tool_use");
  });
}

/** The sampling, stop, token and reasoning fields both OpenAI request shapes share, in Anthropic form. */
export function anthropicSettings(
  fields: {
    maxTokens: unknown;
    effort: unknown;
    temperature: unknown;
    topP: unknown;
    stop?: unknown;
    messages: unknown[];
    /** Thinking asked for some other way than an effort (Gemini's budget), and the field that asked. */
    thinking?: { of(maxTokens: number): JsonObject | undefined; field: string };
  },
  ctx: TranslateContext,
): JsonObject {
  // Towards a Responses upstream a request without a limit stays without one, and thinking needs no signed history.
  const asked = clampMaxTokens(fields.maxTokens, ctx.maxOutputTokens);
  const maxTokens = asked ?? (ctx.towards === "openai-responses" ? undefined : ctx.defaultMaxTokens);
  const out: JsonObject = maxTokens === undefined ? {} : { max_tokens: maxTokens };
  const room = maxTokens ?? Infinity;
  let thinking = fields.thinking ? fields.thinking.of(room) : thinkingFromEffort(fields.effort, room);
  if (thinking && ctx.towards !== "openai-responses" && hasUnthoughtToolUse(fields.messages)) {
    logDrop(ctx, { field: fields.thinking?.field ?? "reasoning", type: "thinking", reason: "tool calls in history" });
    thinking = undefined;
  }
  if (thinking) out.thinking = thinking;
  // Extended thinking rejects a changed temperature or top_p, so they only cross without it.
  if (!thinking) {
    // OpenAI's temperature runs to 2, Anthropic's to 1.
    if (typeof fields.temperature === "number") out.temperature = Math.min(1, fields.temperature);
    if (typeof fields.topP === "number") out.top_p = fields.topP;
  }
  const stop = typeof fields.stop === "string" ? [fields.stop] : fields.stop;
  if (Array.isArray(stop) && stop.length > 0) out.stop_sequences = stop;
  return out;
}

/** Builds the Anthropic request; chat-only fields (logprobs, penalties, seed) are dropped. */
export function chatToMessagesRequest(body: JsonObject, ctx: TranslateContext): JsonObject {
  if (typeof body.n === "number" && body.n > 1) throw unsupported("n", "must be 1 for this model");
  const system: JsonObject[] = [];
  const turns = anthropicTurns();
  for (const message of (body.messages as unknown[]).filter(isObject)) {
    const role = message.role;
    if (role === "system" || role === "developer") system.push(...textBlocks(joinText(message.content)));
    else if (role === "tool") {
      const id = sanitizeToolId(message.tool_call_id, "call_missing");
      turns.add("user", [toolResult(id, joinText(message.content))]);
    } else if (role === "assistant") {
      const blocks = contentBlocks(message.content, ctx);
      const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
      calls.forEach((call, i) => {
        const custom = isObject(call.custom) ? call.custom : undefined;
        const fn = custom ?? (isObject(call.function) ? call.function : {});
        blocks.push({
          type: "tool_use",
          id: sanitizeToolId(call.id, `call_${i}`),
          name: String(fn.name ?? ""),
          input: custom ? { [FREEFORM_PARAM]: String(custom.input ?? "") } : parseToolArguments(fn.arguments),
        });
      });
      turns.add("assistant", blocks);
    } else turns.add("user", contentBlocks(message.content, ctx));
  }
  const messages = turns.messages();
  const out: JsonObject = {
    model: ctx.upstreamModel,
    messages,
    ...anthropicSettings({
      messages,
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      effort: body.reasoning_effort,
      temperature: body.temperature,
      topP: body.top_p,
      stop: body.stop,
    }, ctx),
  };
  if (system.length > 0) out.system = system;
  const tools = anthropicTools(body.tools, ctx);
  if (tools) {
    out.tools = tools;
    const choice = anthropicToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice) out.tool_choice = choice;
  }
  if (typeof body.user === "string") out.metadata = { user_id: body.user };
  if (body.stream === true) out.stream = true;
  return out;
}
