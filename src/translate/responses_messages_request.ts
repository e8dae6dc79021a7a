/**
 * @module OpenAI Responses request -> Chat Completions request and -> Anthropic Messages request: the subset
 * Codex CLI uses (input items, instructions, function, freeform and namespaced tools, tool calls and their outputs,
 * reasoning items), with everything else dropped and logged, except tool calls and outputs the upstream cannot
 * take, which are refused. Anthropic thinking survives a round trip sealed in a reasoning item's `encrypted_content`.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTool, anthropicToolChoice, anthropicTurns, textBlocks, toolResult } from "./anthropic_turns.ts";
import { anthropicSettings } from "./chat_messages_request.ts";
import { FREEFORM_PARAM } from "./freeform_tools.ts";
import type { TranslateContext } from "./identity.ts";
import {
  CALL_ITEMS,
  chatCall,
  chosenTool,
  dropped,
  historyCall,
  OUTPUT_ITEMS,
  type ResponsesState,
  type ResponsesTools,
  untranslatable,
} from "./responses_tools.ts";
import { anthropicImage, clampMaxTokens, joinText, parseToolArguments, sanitizeToolId, unsupported } from "./shared.ts";

const SEAL = "modelgate.thinking.v1:";

/** Seals an Anthropic thinking or redacted_thinking block into an opaque `encrypted_content` string. */
export function sealThinking(block: JsonObject): string {
  const bytes = new TextEncoder().encode(JSON.stringify(block));
  return SEAL + btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""));
}

/** The thinking block sealed by {@linkcode sealThinking}, or undefined for anything else. */
export function unsealThinking(encrypted: unknown): JsonObject | undefined {
  if (typeof encrypted !== "string" || !encrypted.startsWith(SEAL)) return undefined;
  try {
    const binary = atob(encrypted.slice(SEAL.length));
    const block = JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    return isObject(block) && (block.type === "thinking" || block.type === "redacted_thinking") ? block : undefined;
  } catch {
    return undefined;
  }
}

/** Fields with no meaning once the request leaves the Responses API; `previous_response_id` is refused. */
function checkUnsupported(body: JsonObject): void {
  if (typeof body.previous_response_id === "string" && body.previous_response_id) {
    throw unsupported(
      "previous_response_id",
      "is not supported for this model; send the whole conversation in input (as with store:false)",
    );
  }
}

/** `input` as a list of items with their place in it; a string is one user message, role-only items are messages. */
function inputItems(body: JsonObject): [JsonObject, number][] {
  if (typeof body.input === "string") return [[{ type: "message", role: "user", content: body.input }, 0]];
  return (body.input as unknown[]).flatMap((item, i): [JsonObject, number][] =>
    !isObject(item)
      ? []
      : [[item.type === undefined && typeof item.role === "string" ? { ...item, type: "message" } : item, i]]
  );
}

/** A function_call_output's `output` (string or content parts) as text. */
function outputText(output: unknown): string {
  return typeof output === "string" ? output : joinText(output);
}

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

/** Content parts of a Responses message as Anthropic blocks. */
function anthropicBlocks(content: unknown, ctx: TranslateContext): JsonObject[] {
  if (typeof content === "string") return textBlocks(content);
  if (!Array.isArray(content)) return [];
  const out: JsonObject[] = [];
  for (const part of content.filter(isObject)) {
    if (typeof part.text === "string") out.push(...textBlocks(part.text));
    else if (part.type === "input_image" && typeof part.image_url === "string") {
      out.push(anthropicImage(part.image_url));
    } else dropped(ctx, "input.content", part.type);
  }
  return out;
}

/** Responses request -> Anthropic request. */
export function responsesToMessagesRequest(body: JsonObject, { ctx, tools }: ResponsesState): JsonObject {
  checkUnsupported(body);
  const system: JsonObject[] = [];
  if (typeof body.instructions === "string") system.push(...textBlocks(body.instructions));
  const turns = anthropicTurns();
  for (const [item, index] of inputItems(body)) {
    if (item.type === "message") {
      const blocks = anthropicBlocks(item.content, ctx);
      if (item.role === "system" || item.role === "developer") system.push(...blocks.filter((b) => b.type === "text"));
      else turns.add(item.role === "assistant" ? "assistant" : "user", blocks);
    } else if (CALL_ITEMS.has(String(item.type))) {
      const call = historyCall(item, tools);
      const input = call.input !== undefined ? { [FREEFORM_PARAM]: call.input } : parseToolArguments(call.arguments);
      turns.add("assistant", [{ type: "tool_use", id: call.id, name: call.name, input }]);
    } else if (OUTPUT_ITEMS.has(String(item.type))) {
      const id = sanitizeToolId(item.call_id, "call_missing");
      turns.add("user", [toolResult(id, outputText(item.output))]);
    } else if (item.type === "reasoning") {
      // Only thinking this gateway sealed carries a signature Anthropic will verify; other reasoning cannot cross.
      const block = unsealThinking(item.encrypted_content);
      if (block) turns.add("assistant", [block]);
    } else untranslatable(item, index, ctx);
  }
  const messages = turns.messages();
  const out: JsonObject = {
    model: ctx.upstreamModel,
    messages,
    ...anthropicSettings({
      messages,
      maxTokens: body.max_output_tokens,
      effort: isObject(body.reasoning) ? body.reasoning.effort : undefined,
      temperature: body.temperature,
      topP: body.top_p,
    }, ctx),
  };
  if (system.length > 0) out.system = system;
  if (tools.offered.length > 0) {
    out.tools = tools.offered.map((tool) => anthropicTool(tool.name, tool.parameters, tool.description));
    const chosen = chosenTool(body.tool_choice, tools);
    const choice = anthropicToolChoice(
      chosen ? { type: "function", name: chosen } : body.tool_choice,
      body.parallel_tool_calls,
    );
    if (choice) out.tool_choice = choice;
  }
  if (body.stream === true) out.stream = true;
  return out;
}
