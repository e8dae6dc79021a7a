/**
 * @module OpenAI Responses request -> Anthropic Messages request: the subset Codex CLI uses (input items, instructions,
 * function, freeform and namespaced tools, tool calls and their outputs, reasoning items), with everything else
 * dropped and logged, except tool calls and outputs the upstream cannot take, which are refused. Anthropic thinking
 * survives a round trip sealed in a reasoning item's `encrypted_content` (responses_reasoning.ts).
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { anthropicTool, anthropicToolChoice, anthropicTurns, textBlocks, toolResult } from "./anthropic_turns.ts";
import { anthropicSettings } from "./chat_messages_request.ts";
import { FREEFORM_PARAM } from "./freeform_tools.ts";
import type { TranslateContext } from "./identity.ts";
import { unsealThinking } from "./responses_reasoning.ts";
import {
  CALL_ITEMS,
  checkUnsupported,
  chosenTool,
  dropped,
  historyCall,
  inputItems,
  OUTPUT_ITEMS,
  outputText,
  type ResponsesState,
  untranslatable,
} from "./responses_tools.ts";
import { anthropicImage, parseToolArguments, sanitizeToolId } from "./shared.ts";

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
