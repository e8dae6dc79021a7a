/**
 * @module OpenAI Responses request -> Chat Completions request and -> Anthropic Messages request: the subset
 * Codex CLI uses (input items, instructions, function tools, reasoning items), with everything else dropped
 * and logged. Anthropic thinking survives a round trip sealed in a reasoning item's `encrypted_content`.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTool, anthropicToolChoice, anthropicTurns, textBlocks, toolResult } from "./anthropic_turns.ts";
import { anthropicSettings } from "./chat_messages_request.ts";
import type { TranslateContext } from "./identity.ts";
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

/** `input` as a list of items; a string is one user message, and role-only items are messages. */
function inputItems(body: JsonObject): JsonObject[] {
  if (typeof body.input === "string") return [{ type: "message", role: "user", content: body.input }];
  return (body.input as unknown[]).filter(isObject).map((item) =>
    item.type === undefined && typeof item.role === "string" ? { ...item, type: "message" } : item
  );
}

function dropped(ctx: TranslateContext, field: string, what: unknown): void {
  ctx.log({ event: "translate_drop", field, type: String(what), reason: "no equivalent upstream" });
}

/** Function tools only; `web_search`, `custom`, `local_shell`, `namespace` and the like are dropped with a log line. */
function functionTools(tools: unknown, ctx: TranslateContext): JsonObject[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(isObject).filter((tool) => {
    if (tool.type === "function" && typeof tool.name === "string") return true;
    dropped(ctx, "tools", tool.type);
    return false;
  });
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

/** Responses request -> chat request. */
export function responsesToChatRequest(body: JsonObject, ctx: TranslateContext): JsonObject {
  checkUnsupported(body);
  const messages: JsonObject[] = [];
  if (typeof body.instructions === "string" && body.instructions) {
    messages.push({ role: "system", content: body.instructions });
  }
  for (const item of inputItems(body)) {
    const last = messages.at(-1);
    if (item.type === "message") {
      const parts = chatParts(item.content, ctx);
      if (parts.length === 0) continue;
      const text = parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : undefined;
      if (item.role === "system" || item.role === "developer") messages.push({ role: "system", content: text ?? "" });
      else if (item.role === "assistant") messages.push({ role: "assistant", content: text ?? "" });
      else messages.push({ role: "user", content: text ?? parts });
    } else if (item.type === "function_call") {
      const call = {
        id: item.call_id,
        type: "function",
        function: { name: item.name, arguments: item.arguments ?? "" },
      };
      if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls as JsonObject[] ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (item.type === "function_call_output") {
      messages.push({ role: "tool", tool_call_id: item.call_id, content: outputText(item.output) });
    } else if (item.type !== "reasoning") dropped(ctx, "input", item.type);
  }
  const out: JsonObject = { model: ctx.upstreamModel, messages: adjacentToolMessages(messages) };
  const tools = functionTools(body.tools, ctx).map((tool) => {
    const fn: JsonObject = { name: tool.name, parameters: tool.parameters ?? { type: "object", properties: {} } };
    if (typeof tool.description === "string") fn.description = tool.description;
    if (typeof tool.strict === "boolean") fn.strict = tool.strict;
    return { type: "function", function: fn };
  });
  if (tools.length > 0) {
    out.tools = tools;
    const choice = body.tool_choice;
    if (typeof choice === "string") out.tool_choice = choice;
    else if (isObject(choice) && choice.type === "function") {
      out.tool_choice = { type: "function", function: { name: choice.name } };
    }
    if (typeof body.parallel_tool_calls === "boolean") out.parallel_tool_calls = body.parallel_tool_calls;
  }
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
export function responsesToMessagesRequest(body: JsonObject, ctx: TranslateContext): JsonObject {
  checkUnsupported(body);
  const system: JsonObject[] = [];
  if (typeof body.instructions === "string") system.push(...textBlocks(body.instructions));
  const turns = anthropicTurns();
  for (const item of inputItems(body)) {
    if (item.type === "message") {
      const blocks = anthropicBlocks(item.content, ctx);
      if (item.role === "system" || item.role === "developer") system.push(...blocks.filter((b) => b.type === "text"));
      else turns.add(item.role === "assistant" ? "assistant" : "user", blocks);
    } else if (item.type === "function_call") {
      const id = sanitizeToolId(item.call_id, "call_missing");
      turns.add("assistant", [{ type: "tool_use", id, name: item.name, input: parseToolArguments(item.arguments) }]);
    } else if (item.type === "function_call_output") {
      const id = sanitizeToolId(item.call_id, "call_missing");
      turns.add("user", [toolResult(id, outputText(item.output))]);
    } else if (item.type === "reasoning") {
      // Only thinking this gateway sealed carries a signature Anthropic will verify; other reasoning cannot cross.
      const block = unsealThinking(item.encrypted_content);
      if (block) turns.add("assistant", [block]);
    } else dropped(ctx, "input", item.type);
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
  const tools = functionTools(body.tools, ctx).map((tool) =>
    anthropicTool(tool.name, tool.parameters, tool.description)
  );
  if (tools.length > 0) {
    out.tools = tools;
    const choice = anthropicToolChoice(body.tool_choice, body.parallel_tool_calls);
    if (choice) out.tool_choice = choice;
  }
  if (body.stream === true) out.stream = true;
  return out;
}
