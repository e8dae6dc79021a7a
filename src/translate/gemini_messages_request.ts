/**
 * @module Gemini `generateContent` request -> Anthropic Messages request (see docs/protocols.md, "Gemini client,
 * Anthropic or chat upstream"): contents and parts, systemInstruction, function declarations, tool config and
 * generation config.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTurns } from "./anthropic_turns.ts";
import { anthropicSettings } from "./chat_messages_request.ts";
import { geminiToolChoice, geminiTools } from "./gemini_messages_tools.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import { sealThinking, unsealThinking } from "./responses_reasoning.ts";
import { sanitizeToolId, thinkingFromEffort, unsupported } from "./shared.ts";

/** A Gemini `thoughtSignature` (base64, as the API's bytes fields are) holding an Anthropic thinking block. */
export function thoughtSignatureFor(block: JsonObject): string {
  return new TextEncoder().encode(sealThinking(block)).toBase64();
}

/** The thinking block a signature from {@linkcode thoughtSignatureFor} holds, or undefined for any other. */
export function thinkingFromSignature(signature: unknown): JsonObject | undefined {
  if (typeof signature !== "string" || signature === "") return undefined;
  try {
    return unsealThinking(new TextDecoder().decode(Uint8Array.fromBase64(signature)));
  } catch {
    return undefined;
  }
}

/** The text of a Gemini `systemInstruction`: a string or a content whose text parts are joined. */
function systemText(system: unknown): string {
  if (typeof system === "string") return system;
  const parts = isObject(system) && Array.isArray(system.parts) ? system.parts : [];
  return parts.filter(isObject).map((p) => typeof p.text === "string" ? p.text : "").filter(Boolean).join("\n");
}

/** Base64 text as UTF-8, or undefined when it is not base64. */
function decodeBase64Text(data: string): string | undefined {
  try {
    return new TextDecoder().decode(Uint8Array.fromBase64(data));
  } catch {
    return undefined;
  }
}

/** An inline or referenced file as an Anthropic block, or undefined when Anthropic cannot take it. */
function mediaBlock(part: JsonObject, path: string, ctx: TranslateContext): JsonObject | undefined {
  if (isObject(part.inlineData)) {
    const { mimeType, data } = part.inlineData;
    if (typeof mimeType !== "string" || typeof data !== "string") {
      throw unsupported(`${path}.inlineData`, "needs a string mimeType and base64 data");
    }
    if (mimeType.startsWith("image/")) return { type: "image", source: { type: "base64", media_type: mimeType, data } };
    if (mimeType === "application/pdf") {
      return { type: "document", source: { type: "base64", media_type: mimeType, data } };
    }
    if (mimeType.startsWith("text/")) {
      const text = decodeBase64Text(data);
      if (text === undefined) throw unsupported(`${path}.inlineData.data`, "is not base64");
      return { type: "document", source: { type: "text", media_type: "text/plain", data: text } };
    }
  } else if (isObject(part.fileData) && typeof part.fileData.fileUri === "string") {
    const uri = part.fileData.fileUri;
    const mime = String(part.fileData.mimeType ?? "");
    if (/^https?:\/\//.test(uri) && mime.startsWith("image/")) {
      return { type: "image", source: { type: "url", url: uri } };
    }
    if (/^https?:\/\//.test(uri) && mime === "application/pdf") {
      return { type: "document", source: { type: "url", url: uri } };
    }
  }
  logDrop(ctx, { field: path, reason: "no Anthropic equivalent" });
  return undefined;
}

/** A functionResponse's `response` as tool_result text: `output` (Gemini CLI's shape) or `error`, else the JSON. */
function responseText(response: unknown): { text: string; error: boolean } {
  if (!isObject(response)) return { text: response === undefined ? "" : JSON.stringify(response), error: false };
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response.output === "string") return { text: response.output, error: false };
  if (keys.length === 1 && response.error !== undefined) {
    return { text: typeof response.error === "string" ? response.error : JSON.stringify(response.error), error: true };
  }
  return { text: JSON.stringify(response), error: false };
}

/** Calls of the model turns not yet answered, so a functionResponse without an id finds its call by name. */
interface OpenCalls {
  take(name: string, id: unknown): string;
  add(name: string, id: string): void;
  /** The ids a user turn answers by id: its responses without one must not take those calls. */
  reserve(ids: readonly string[]): void;
}

function openCalls(): OpenCalls {
  const open: { name: string; id: string }[] = [];
  let reserved = new Set<string>();
  return {
    add: (name, id) => open.push({ name, id }),
    reserve: (ids) => void (reserved = new Set(ids.map((id) => sanitizeToolId(id, "")))),
    take(name, id) {
      const byId = typeof id === "string" && id;
      const at = open.findIndex((c) => byId ? c.id === sanitizeToolId(id, "") : c.name === name && !reserved.has(c.id));
      if (at === -1) return sanitizeToolId(id, `toolu_${name}`);
      return open.splice(at, 1)[0].id;
    },
  };
}

/** One content's parts as Anthropic blocks for its role. */
function blocksOf(
  content: JsonObject,
  at: { path: string; turn: number; calls: OpenCalls },
  ctx: TranslateContext,
): JsonObject[] {
  const model = content.role === "model";
  const parts = Array.isArray(content.parts) ? content.parts : [];
  const blocks: JsonObject[] = [];
  const thoughts: JsonObject[] = [];
  const signed = new Set<string>();
  /** A signature this gateway made puts its thinking block back where it came from, once. */
  const restore = (signature: unknown) => {
    const block = model ? thinkingFromSignature(signature) : undefined;
    const key = JSON.stringify(block);
    if (block && !signed.has(key)) {
      signed.add(key);
      thoughts.push(block);
    }
  };
  if (!model) {
    const answered = parts.map((p) => isObject(p) && isObject(p.functionResponse) ? p.functionResponse.id : undefined);
    at.calls.reserve(answered.filter((id): id is string => typeof id === "string" && id !== ""));
  }
  parts.forEach((raw, i) => {
    const path = `${at.path}.parts[${i}]`;
    if (!isObject(raw)) throw unsupported(path, "must be an object");
    restore(raw.thoughtSignature);
    if (raw.thought === true) return;
    if (typeof raw.text === "string") {
      if (raw.text.trim()) blocks.push({ type: "text", text: raw.text });
    } else if (isObject(raw.functionCall)) {
      if (!model) throw unsupported(`${path}.functionCall`, "only a model turn may call a function");
      const { name, args, id } = raw.functionCall;
      if (typeof name !== "string" || !name) throw unsupported(`${path}.functionCall.name`, "is required");
      const callId = sanitizeToolId(id, `toolu_gm${at.turn}_${i}`);
      at.calls.add(name, callId);
      blocks.push({ type: "tool_use", id: callId, name, input: isObject(args) ? args : {} });
    } else if (isObject(raw.functionResponse)) {
      if (model) throw unsupported(`${path}.functionResponse`, "belongs in a user turn");
      const { name, id, response } = raw.functionResponse;
      if (typeof name !== "string" || !name) throw unsupported(`${path}.functionResponse.name`, "is required");
      const { text, error } = responseText(response);
      const block: JsonObject = { type: "tool_result", tool_use_id: at.calls.take(name, id) };
      if (text) block.content = text;
      if (error) block.is_error = true;
      blocks.push(block);
    } else if (isObject(raw.inlineData) || isObject(raw.fileData)) {
      const block = mediaBlock(raw, path, ctx);
      if (block) blocks.push(block);
    } else {
      logDrop(ctx, { field: path, reason: "part kind has no Anthropic equivalent" });
    }
  });
  // The API wants an assistant turn's thinking ahead of its text and calls, wherever the signature stood.
  return [...thoughts, ...blocks];
}

/** Gemini `contents` as Anthropic `messages`. */
function messagesOf(contents: unknown, ctx: TranslateContext): JsonObject[] {
  if (!Array.isArray(contents) || contents.length === 0) throw unsupported("contents", "must be a non-empty array");
  const turns = anthropicTurns();
  const calls = openCalls();
  contents.forEach((content, turn) => {
    const path = `contents[${turn}]`;
    if (!isObject(content)) throw unsupported(path, "must be an object");
    const role = content.role ?? "user";
    if (role !== "user" && role !== "model") throw unsupported(`${path}.role`, 'must be "user" or "model"');
    turns.add(role === "model" ? "assistant" : "user", blocksOf(content, { path, turn, calls }, ctx));
  });
  return turns.messages();
}

/** Thinking asked for by `thinkingConfig`: a budget, a level, or -1 (the model decides: a medium budget here). */
function thinkingOf(config: unknown, maxTokens: number): JsonObject | undefined {
  if (!isObject(config)) return undefined;
  if (typeof config.thinkingLevel === "string") {
    return thinkingFromEffort(config.thinkingLevel.toLowerCase(), maxTokens);
  }
  const budget = config.thinkingBudget;
  if (budget === -1) return thinkingFromEffort("medium", maxTokens);
  if (typeof budget !== "number" || budget <= 0) return undefined;
  const fitted = Math.min(Math.max(1024, Math.trunc(budget)), maxTokens - 1);
  return fitted >= 1024 ? { type: "enabled", budget_tokens: fitted } : undefined;
}

/** A Gemini request body (with the model the path named) as an Anthropic Messages request. */
export function geminiToMessagesRequest(body: JsonObject, ctx: TranslateContext, counting = false): JsonObject {
  const config = isObject(body.generationConfig) ? body.generationConfig : {};
  if (typeof config.candidateCount === "number" && config.candidateCount > 1) {
    throw unsupported("generationConfig.candidateCount", "only 1 candidate can be generated");
  }
  const out: JsonObject = { model: ctx.upstreamModel, messages: messagesOf(body.contents, ctx) };
  const system = systemText(body.systemInstruction);
  if (system) out.system = system;
  const tools = geminiTools(body.tools, ctx);
  if (tools) out.tools = tools;
  const choice = geminiToolChoice(body.toolConfig);
  if (choice && tools) out.tool_choice = choice;
  // count_tokens takes the prompt only: the real API refuses generation fields there.
  if (counting) return out;
  Object.assign(
    out,
    anthropicSettings({
      maxTokens: config.maxOutputTokens,
      effort: undefined,
      temperature: config.temperature,
      topP: config.topP,
      stop: config.stopSequences,
      messages: out.messages as unknown[],
      thinking: { of: (max) => thinkingOf(config.thinkingConfig, max), field: "generationConfig.thinkingConfig" },
    }, ctx),
  );
  // Like temperature, top_k is refused alongside extended thinking.
  if (!out.thinking && typeof config.topK === "number") out.top_k = config.topK;
  if (body.stream === true) out.stream = true;
  return out;
}
