/**
 * @module OpenAI Responses request -> Chat Completions request: the same subset as onto Messages (input items,
 * instructions, function, freeform and namespaced tools, tool calls and their outputs), with reasoning items left out
 * (a chat upstream cannot read them), everything else dropped and logged, and tool calls and outputs the upstream
 * cannot take refused.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import type { TranslateContext } from "./identity.ts";
import {
  CALL_ITEMS,
  chatCall,
  checkUnsupported,
  chosenTool,
  dropped,
  historyCall,
  inputItems,
  OUTPUT_ITEMS,
  outputText,
  type ResponsesState,
  type ResponsesTools,
  untranslatable,
} from "./responses_tools.ts";
import { clampMaxTokens, sanitizeToolId } from "./shared.ts";

/** Content parts of a Responses message as chat parts. */
function chatParts(content: unknown, ctx: TranslateContext): JsonObject[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  if (!Array.isArray(content)) return [];
  const out: JsonObject[] = [];
  for (const part of content.filter(isObject)) {
    if (typeof part.text === "string" && part.text) out.push({ type: "text", text: part.text });
    else if (part.type === "input_image" && typeof part.image_url === "string") {
      out.push({ type: "image_url", image_url: { url: part.image_url } });
    } else if (part.type !== "input_text" && part.type !== "output_text") dropped(ctx, "input.content", part.type);
  }
  return out;
}

/** Chat wants the tool messages right after the assistant turn that holds the calls. */
function adjacentToolMessages(messages: JsonObject[]): JsonObject[] {
  const tools = messages.filter((m) => m.role === "tool");
  const out: JsonObject[] = [];
  const placed = new Set<JsonObject>();
  for (const message of messages) {
    if (message.role === "tool") {
      if (!placed.has(message)) out.push(message);
      continue;
    }
    out.push(message);
    const ids = Array.isArray(message.tool_calls) ? message.tool_calls.map((c) => (c as JsonObject).id) : [];
    for (const tool of tools) {
      if (!placed.has(tool) && ids.includes(tool.tool_call_id)) {
        out.push(tool);
        placed.add(tool);
      }
    }
  }
  return out;
}

/** The request's tools in chat form, with `tool_choice` and `parallel_tool_calls` when there are any. */
function chatTools(body: JsonObject, out: JsonObject, tools: ResponsesTools): void {
  if (tools.offered.length === 0) return;
  out.tools = tools.offered.map((tool) => {
    if (tool.native) return tool.native;
    const fn: JsonObject = { name: tool.name, parameters: tool.parameters };
    if (tool.description !== undefined) fn.description = tool.description;
    if (tool.strict !== undefined) fn.strict = tool.strict;
    return { type: "function", function: fn };
  });
  const choice = body.tool_choice;
  const chosen = chosenTool(choice, tools);
  if (typeof choice === "string") out.tool_choice = choice;
  else if (chosen && tools.native && isObject(choice) && choice.type === "custom") {
    out.tool_choice = { type: "custom", custom: { name: chosen } };
  } else if (chosen) out.tool_choice = { type: "function", function: { name: chosen } };
  if (typeof body.parallel_tool_calls === "boolean") out.parallel_tool_calls = body.parallel_tool_calls;
}

/** Responses request -> chat request. */
export function responsesToChatRequest(body: JsonObject, { ctx, tools }: ResponsesState): JsonObject {
  checkUnsupported(body);
  const messages: JsonObject[] = [];
  if (typeof body.instructions === "string" && body.instructions) {
    messages.push({ role: "system", content: body.instructions });
  }
  for (const [item, index] of inputItems(body)) {
    const last = messages.at(-1);
    if (item.type === "message") {
      const parts = chatParts(item.content, ctx);
      if (parts.length === 0) continue;
      const text = parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : undefined;
      if (item.role === "system" || item.role === "developer") messages.push({ role: "system", content: text ?? "" });
      else if (item.role === "assistant") messages.push({ role: "assistant", content: text ?? "" });
      else messages.push({ role: "user", content: text ?? parts });
    } else if (CALL_ITEMS.has(String(item.type))) {
      const call = chatCall(historyCall(item, tools), tools);
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls as JsonObject[] ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (OUTPUT_ITEMS.has(String(item.type))) {
      messages.push({
        role: "tool",
        tool_call_id: sanitizeToolId(item.call_id, "call_missing"),
        content: outputText(item.output),
      });
    } else if (item.type !== "reasoning") untranslatable(item, index, ctx);
  }
  const out: JsonObject = { model: ctx.upstreamModel, messages: adjacentToolMessages(messages) };
  chatTools(body, out, tools);
  const maxTokens = clampMaxTokens(body.max_output_tokens, ctx.maxOutputTokens);
  if (maxTokens !== undefined) out[ctx.maxTokensField ?? "max_tokens"] = maxTokens;
  for (const field of ["temperature", "top_p", "user"]) if (body[field] !== undefined) out[field] = body[field];
  if (isObject(body.reasoning) && typeof body.reasoning.effort === "string" && !ctx.reasoningEffort) {
    dropped(ctx, "reasoning", "effort");
  } else if (isObject(body.reasoning) && typeof body.reasoning.effort === "string") {
    out.reasoning_effort = body.reasoning.effort;
  }
  const format = isObject(body.text) && isObject(body.text.format) ? body.text.format : undefined;
  if (format?.type === "json_schema") {
    out.response_format = {
      type: "json_schema",
      json_schema: { name: format.name, schema: format.schema, strict: format.strict },
    };
  } else if (format?.type === "json_object") out.response_format = { type: "json_object" };
  if (body.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return out;
}
