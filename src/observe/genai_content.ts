/**
 * @module Prompt and answer text in the GenAI conventions' message shape, for an operator who opted in to export it:
 * each protocol's messages as `{role, parts}` with text, reasoning, tool calls and tool results (media is named by its
 * type, never copied). Pure.
 */
import { isObject, type JsonObject, type Protocol } from "../core/types.ts";
import { reasoningText } from "../translate/responses_reasoning.ts";

/** One part of a message: `{type, ...}` as the conventions name them. */
type Part = Record<string, unknown>;

/** One message: a role and its parts. */
interface Message {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function text(content: string): Part {
  return { type: "text", content };
}

/** An Anthropic content block (or a Responses content part) as a part. */
function blockPart(block: unknown): Part | undefined {
  if (typeof block === "string") return text(block);
  if (!isObject(block)) return undefined;
  const type = String(block.type);
  if (typeof block.text === "string") return text(block.text);
  if (type === "thinking" && typeof block.thinking === "string") return { type: "reasoning", content: block.thinking };
  if (type === "tool_use") return { type: "tool_call", id: block.id, name: block.name, arguments: block.input };
  if (type === "tool_result") {
    const response = typeof block.content === "string" ? block.content : list(block.content).map(blockPart);
    return { type: "tool_call_response", id: block.tool_use_id, response };
  }
  // Images, documents and other media are named, never copied: they may be megabytes.
  return { type };
}

function parts(content: unknown): Part[] {
  if (typeof content === "string") return [text(content)];
  return list(content).map(blockPart).filter((part) => part !== undefined);
}

/** A chat message's parts: its content, its tool calls, or the tool result it carries. */
function chatMessage(message: JsonObject): Message {
  const role = String(message.role);
  if (role === "tool") {
    return { role, parts: [{ type: "tool_call_response", id: message.tool_call_id, response: message.content }] };
  }
  const calls = list(message.tool_calls).filter(isObject).map((call) => {
    const fn = isObject(call.function) ? call.function : {};
    return { type: "tool_call", id: call.id, name: fn.name, arguments: fn.arguments };
  });
  return { role, parts: [...parts(message.content), ...calls] };
}

/** A Responses input item as a message. */
function responsesItem(item: unknown): Message | undefined {
  if (typeof item === "string") return { role: "user", parts: [text(item)] };
  if (!isObject(item)) return undefined;
  if (item.type === "function_call") {
    return {
      role: "assistant",
      parts: [{ type: "tool_call", id: item.call_id, name: item.name, arguments: item.arguments }],
    };
  }
  if (item.type === "function_call_output") {
    return { role: "tool", parts: [{ type: "tool_call_response", id: item.call_id, response: item.output }] };
  }
  return typeof item.role === "string" ? { role: item.role, parts: parts(item.content) } : undefined;
}

/** A Gemini part as a part; a thought signature is left out (it is opaque, and large). */
function geminiPart(part: unknown): Part | undefined {
  if (!isObject(part)) return undefined;
  if (typeof part.text === "string") {
    return part.thought === true ? { type: "reasoning", content: part.text } : text(part.text);
  }
  const call = part.functionCall;
  if (isObject(call)) return { type: "tool_call", id: call.id, name: call.name, arguments: call.args };
  const result = part.functionResponse;
  if (isObject(result)) return { type: "tool_call_response", id: result.id, response: result.response };
  // Inline data and files are named by their kind, never copied.
  const kind = Object.keys(part).find((key) => key !== "thoughtSignature" && key !== "thought");
  return kind ? { type: kind } : undefined;
}

/** A Gemini content (`{role, parts}`) as a message; Gemini's `model` is the conventions' `assistant`. */
function geminiContent(content: unknown): Message {
  const c = isObject(content) ? content : {};
  const role = c.role === "model" || c.role === undefined ? "assistant" : String(c.role);
  return { role, parts: list(c.parts).map(geminiPart).filter((part) => part !== undefined) };
}

/** The request's system instructions and messages, as the conventions' JSON strings. */
export function inputContent(protocol: Protocol, body: JsonObject): Record<string, string> {
  let system: Part[] = [];
  let messages: Message[] = [];
  if (protocol === "anthropic") {
    system = parts(body.system);
    messages = list(body.messages).filter(isObject).map((m) => ({ role: String(m.role), parts: parts(m.content) }));
  } else if (protocol === "openai-chat") {
    const all = list(body.messages).filter(isObject).map(chatMessage);
    system = all.filter((m) => m.role === "system" || m.role === "developer").flatMap((m) => m.parts);
    messages = all.filter((m) => m.role !== "system" && m.role !== "developer");
  } else if (protocol === "gemini") {
    system = isObject(body.systemInstruction) ? geminiContent(body.systemInstruction).parts : [];
    messages = list(body.contents).map(geminiContent);
  } else {
    system = parts(body.instructions);
    const input = typeof body.input === "string" ? [body.input] : list(body.input);
    messages = input.map(responsesItem).filter((m) => m !== undefined);
  }
  const out: Record<string, string> = { "gen_ai.input.messages": JSON.stringify(messages) };
  if (system.length > 0) out["gen_ai.system_instructions"] = JSON.stringify(system);
  return out;
}

/**
 * A Responses output item's parts: a message's text and refusals, a reasoning item's summary (or its reasoning text),
 * a function or custom tool's call; any other item (a built-in tool's call) is named by its type.
 */
function outputItemParts(item: JsonObject): Part[] {
  if (item.type === "message") {
    return list(item.content).filter(isObject).map((part) =>
      typeof part.refusal === "string" ? text(part.refusal) : blockPart(part)
    ).filter((part) => part !== undefined);
  }
  if (item.type === "reasoning") {
    const content = reasoningText(item);
    return content ? [{ type: "reasoning", content }] : [];
  }
  if (item.type === "function_call" || item.type === "custom_tool_call") {
    return [{ type: "tool_call", id: item.call_id, name: item.name, arguments: item.arguments ?? item.input }];
  }
  return [{ type: String(item.type) }];
}

/**
 * A whole answer in the upstream's protocol (an Anthropic message, a chat completion, a Responses answer or a Gemini
 * answer), as output messages. A Responses answer is one message of all its output items; its finish reason is why it
 * is incomplete, else its status, as the answer's metering reads it.
 */
export function outputContent(body: JsonObject): Record<string, string> {
  if (Array.isArray(body.output)) {
    const incomplete = isObject(body.incomplete_details) ? body.incomplete_details.reason : undefined;
    const message = {
      role: "assistant",
      parts: body.output.filter(isObject).flatMap(outputItemParts),
      finish_reason: String(incomplete ?? body.status),
    };
    return { "gen_ai.output.messages": JSON.stringify([message]) };
  }
  if (Array.isArray(body.candidates)) {
    const messages = body.candidates.filter(isObject).map((candidate) => ({
      ...geminiContent(candidate.content ?? { role: "model" }),
      finish_reason: String(candidate.finishReason),
    }));
    return { "gen_ai.output.messages": JSON.stringify(messages) };
  }
  const messages: Message[] = Array.isArray(body.choices)
    ? body.choices.filter(isObject).map((choice) => ({
      ...chatMessage(isObject(choice.message) ? choice.message : { role: "assistant" }),
      finish_reason: String(choice.finish_reason),
    }))
    : [{ role: "assistant", parts: parts(body.content), finish_reason: String(body.stop_reason) }];
  return { "gen_ai.output.messages": JSON.stringify(messages) };
}
