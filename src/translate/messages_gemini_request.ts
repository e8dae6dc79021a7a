/**
 * @module Anthropic Messages request -> Gemini `generateContent` request (see docs/protocols.md, "Anthropic Messages
 * client, Gemini upstream"), with the thought signatures the gateway carried in tool-use ids put back on their calls.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { geminiSchema } from "./gemini_schema.ts";
import { logDrop, type TranslateContext } from "./identity.ts";
import { joinText, type ToolNames } from "./shared.ts";

/** Google's documented stand-in for a call whose signature is gone (a history from another model, or migrated). */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

const SIGNATURE_MARK = "__ts_";

/** A tool-use id that carries a Gemini thought signature (base64, carried as base64url, which ids allow). */
export function idWithSignature(id: string, signature: string | undefined): string {
  if (!signature) return id;
  return `${id}${SIGNATURE_MARK}${signature.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** The thought signature a tool-use id carries, or undefined. */
export function signatureInId(id: unknown): string | undefined {
  if (typeof id !== "string") return undefined;
  const at = id.indexOf(SIGNATURE_MARK);
  if (at === -1) return undefined;
  const b64 = id.slice(at + SIGNATURE_MARK.length).replace(/-/g, "+").replace(/_/g, "/");
  return b64 ? b64 + "=".repeat((4 - b64.length % 4) % 4) : undefined;
}

/** What marks a thinking block's signature, or a redacted_thinking block's data, as a Gemini text part's signature. */
const TEXT_SIGNATURE_MARK = "modelgate-gemini-text-signature:";

/**
 * The block that carries the signature Gemini put on an answer's text: the answer's thinking block (as its signature),
 * else a redacted_thinking block, which clients send back as they got it and do not show.
 */
export function textSignatureBlock(signature: string, thinking: string | undefined): JsonObject {
  const carried = TEXT_SIGNATURE_MARK + signature;
  return thinking ? { type: "thinking", thinking, signature: carried } : { type: "redacted_thinking", data: carried };
}

/** The text signature a block from {@linkcode textSignatureBlock} carries, or undefined. */
export function textSignatureIn(block: unknown): string | undefined {
  if (!isObject(block)) return undefined;
  const carried = block.type === "thinking" ? block.signature : block.type === "redacted_thinking" ? block.data : "";
  if (typeof carried !== "string" || !carried.startsWith(TEXT_SIGNATURE_MARK)) return undefined;
  return carried.slice(TEXT_SIGNATURE_MARK.length) || undefined;
}

/** A user block as a Gemini part, or undefined when Gemini cannot take it. */
function userPart(block: JsonObject, ctx: TranslateContext): JsonObject | undefined {
  if (block.type === "text") return typeof block.text === "string" && block.text ? { text: block.text } : undefined;
  const source = isObject(block.source) ? block.source : {};
  if ((block.type === "image" || block.type === "document") && source.type === "base64") {
    return { inlineData: { mimeType: source.media_type, data: source.data } };
  }
  if (block.type === "document" && source.type === "text" && typeof source.data === "string") {
    return { text: source.data };
  }
  logDrop(ctx, { field: `content.${String(block.type)}`, reason: "no Gemini equivalent" });
  return undefined;
}

/** A tool_result as a functionResponse, named after the call it answers; only its text crosses. */
function functionResponse(block: JsonObject, calls: Map<string, string>, ctx: TranslateContext): JsonObject {
  if (Array.isArray(block.content) && block.content.some((part) => isObject(part) && part.type !== "text")) {
    logDrop(ctx, { field: "content.tool_result.content", reason: "function responses carry text only" });
  }
  const text = joinText(block.content);
  const name = calls.get(String(block.tool_use_id)) ?? "unknown_function";
  return { functionResponse: { name, response: block.is_error === true ? { error: text } : { output: text } } };
}

/** The Gemini `contents` of an Anthropic conversation. */
function contentsOf(messages: unknown, ctx: TranslateContext, names: ToolNames): JsonObject[] {
  const calls = new Map<string, string>();
  const contents: JsonObject[] = [];
  for (const message of Array.isArray(messages) ? messages.filter(isObject) : []) {
    const model = message.role === "assistant";
    const blocks = typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : Array.isArray(message.content)
      ? message.content.filter(isObject)
      : [];
    const parts: JsonObject[] = [];
    let signed = false;
    let textSignature: string | undefined;
    for (const block of blocks) {
      if (model && block.type === "tool_use") {
        const name = names.toUpstream(String(block.name));
        calls.set(String(block.id), name);
        const part: JsonObject = { functionCall: { name, args: isObject(block.input) ? block.input : {} } };
        // Gemini wants the first call of each model turn signed; a call that lost its signature gets the stand-in.
        const signature = signatureInId(block.id) ?? (signed ? undefined : SKIP_SIGNATURE);
        if (signature) part.thoughtSignature = signature;
        signed = true;
        parts.push(part);
      } else if (model && block.type === "text") {
        if (typeof block.text === "string" && block.text) parts.push({ text: block.text });
      } else if (model) {
        // Thinking from an upstream cannot be verified by Gemini: its own state travels in the signatures.
        textSignature ??= textSignatureIn(block);
        continue;
      } else if (block.type === "tool_result") parts.push(functionResponse(block, calls, ctx));
      else {
        const part = userPart(block, ctx);
        if (part) parts.push(part);
      }
    }
    // Gemini put it on the answer's final text part (see docs/protocols.md, "Anthropic Messages client, Gemini upstream").
    const lastText = textSignature ? parts.findLast((part) => typeof part.text === "string") : undefined;
    if (lastText && !lastText.thoughtSignature) lastText.thoughtSignature = textSignature;
    if (parts.length === 0) continue;
    const role = model ? "model" : "user";
    const last = contents.at(-1);
    if (last?.role === role) (last.parts as JsonObject[]).push(...parts);
    else contents.push({ role, parts });
  }
  return contents;
}

/** Anthropic tools as one Gemini tool of function declarations; server tools cannot cross. */
function toolsOf(tools: unknown, ctx: TranslateContext, names: ToolNames): JsonObject[] | undefined {
  const declarations: JsonObject[] = [];
  (Array.isArray(tools) ? tools : []).forEach((tool, i) => {
    if (!isObject(tool) || typeof tool.name !== "string") return;
    if (tool.type !== undefined && tool.type !== "custom" && !isObject(tool.input_schema)) {
      logDrop(ctx, { field: "tools", tool: String(tool.type), reason: "server tool" });
      return;
    }
    const fn: JsonObject = {
      name: names.toUpstream(tool.name),
      parameters: geminiSchema(tool.input_schema, { field: `tools[${i}].input_schema`, tool: tool.name }),
    };
    if (typeof tool.description === "string") fn.description = tool.description;
    declarations.push(fn);
  });
  return declarations.length > 0 ? [{ functionDeclarations: declarations }] : undefined;
}

/** `tool_choice` as Gemini's function-calling config. */
function toolConfigOf(choice: unknown, names: ToolNames): JsonObject | undefined {
  if (!isObject(choice)) return undefined;
  const modes: Record<string, string> = { auto: "AUTO", any: "ANY", tool: "ANY", none: "NONE" };
  const mode = modes[String(choice.type)];
  if (!mode) return undefined;
  const config: JsonObject = { mode };
  if (choice.type === "tool" && typeof choice.name === "string") {
    config.allowedFunctionNames = [names.toUpstream(choice.name)];
  }
  return { functionCallingConfig: config };
}

/** Anthropic `thinking` as Gemini's `thinkingConfig`; thoughts are asked for so the client sees them. */
function thinkingConfigOf(thinking: unknown): JsonObject | undefined {
  if (!isObject(thinking)) return undefined;
  if (thinking.type === "enabled" && typeof thinking.budget_tokens === "number") {
    return { thinkingBudget: thinking.budget_tokens, includeThoughts: true };
  }
  if (thinking.type === "adaptive") return { thinkingBudget: -1, includeThoughts: true };
  return undefined;
}

/** A Messages request as a Gemini request; `model` and `stream` stay for the transport, which takes them out. */
export function messagesToGeminiRequest(body: JsonObject, ctx: TranslateContext, names: ToolNames): JsonObject {
  const out: JsonObject = { model: ctx.upstreamModel, contents: contentsOf(body.messages, ctx, names) };
  if (body.stream === true) out.stream = true;
  const system = joinText(body.system);
  if (system) out.systemInstruction = { parts: [{ text: system }] };
  const tools = toolsOf(body.tools, ctx, names);
  if (tools) out.tools = tools;
  const toolConfig = tools && toolConfigOf(body.tool_choice, names);
  if (toolConfig) out.toolConfig = toolConfig;
  const config: JsonObject = {};
  if (typeof body.max_tokens === "number") {
    config.maxOutputTokens = Math.min(body.max_tokens, ctx.maxOutputTokens ?? Infinity);
  }
  if (typeof body.temperature === "number") config.temperature = body.temperature;
  if (typeof body.top_p === "number") config.topP = body.top_p;
  if (typeof body.top_k === "number") config.topK = body.top_k;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) config.stopSequences = body.stop_sequences;
  const thinking = thinkingConfigOf(body.thinking);
  if (thinking) config.thinkingConfig = thinking;
  if (Object.keys(config).length > 0) out.generationConfig = config;
  return out;
}
