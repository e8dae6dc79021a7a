/**
 * @module Building an Anthropic `messages` array from OpenAI-style history: same-role turns merge, tool results
 * lead the user turn that follows their tool calls, and the conversation starts with a user turn.
 */
import { isObject, type JsonObject } from "../core/types.ts";

/** Collects content blocks into alternating user/assistant turns. */
export interface AnthropicTurns {
  /** Appends blocks to the last turn when it has this role, else starts a new turn. */
  add(role: "user" | "assistant", blocks: JsonObject[]): void;
  /** The finished `messages` array. */
  messages(): JsonObject[];
}

/** A fresh turn builder. */
export function anthropicTurns(): AnthropicTurns {
  const turns: { role: "user" | "assistant"; content: JsonObject[] }[] = [];
  return {
    add(role, blocks) {
      if (blocks.length === 0) return;
      const last = turns.at(-1);
      if (last?.role === role) last.content.push(...blocks);
      else turns.push({ role, content: [...blocks] });
    },
    messages() {
      const out = turns.map((turn) => {
        // The API wants each tool_result right after the tool_use turn, ahead of the user's other content.
        const results = turn.content.filter((block) => block.type === "tool_result");
        const rest = turn.content.filter((block) => block.type !== "tool_result");
        return { role: turn.role, content: [...results, ...rest] as JsonObject[] };
      });
      // The real API rejects a conversation that opens with the assistant; a placeholder user turn fixes that.
      if (out[0]?.role !== "user") out.unshift({ role: "user", content: [{ type: "text", text: "..." }] });
      return out;
    },
  };
}

/** Text blocks for text with something in it (the real API rejects empty and whitespace-only text blocks). */
export function textBlocks(text: string): JsonObject[] {
  return text.trim() ? [{ type: "text", text }] : [];
}

/** A tool_result block; empty output is sent as no content rather than an empty string. */
export function toolResult(toolUseId: string, text: string): JsonObject {
  return text
    ? { type: "tool_result", tool_use_id: toolUseId, content: text }
    : { type: "tool_result", tool_use_id: toolUseId };
}

/** An Anthropic tool from an OpenAI function's parts (chat or Responses shape); no schema means "no arguments". */
export function anthropicTool(name: unknown, parameters: unknown, description: unknown): JsonObject {
  const tool: JsonObject = {
    name,
    input_schema: isObject(parameters) ? parameters : { type: "object", properties: {} },
  };
  if (typeof description === "string") tool.description = description;
  return tool;
}

/** `tool_choice` from OpenAI's (chat or Responses shape) to Anthropic's, with `parallel_tool_calls:false` folded in. */
export function anthropicToolChoice(choice: unknown, parallel: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === "required") out = { type: "any" };
  else if (choice === "none") out = { type: "none" };
  else if (choice === "auto") out = { type: "auto" };
  else if (typeof choice === "object" && choice !== null) {
    const c = choice as JsonObject;
    const named = c.function ?? c.custom;
    const fn = typeof named === "object" && named !== null ? named as JsonObject : c;
    if ((c.type === "function" || c.type === "custom") && typeof fn.name === "string") {
      out = { type: "tool", name: fn.name };
    }
  }
  if (parallel === false && out?.type !== "none") {
    out = { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
  }
  return out;
}
