/**
 * @module A chat stream's tool calls put back together from their fragments: upstreams may interleave indices or send
 * a call's name late (see docs/protocols.md, "Chat Completions streams").
 */
import { isObject, type JsonObject } from "../core/types.ts";

/** A streamed chat tool call, assembled from its fragments. */
export interface BufferedCall {
  index: number;
  id: string;
  name: string;
  /** Arguments of a function call, or the raw input of a `custom` call. */
  args: string;
  /** A call to a freeform tool in the chat API's own `custom` shape. */
  custom: boolean;
}

/** Collects chat tool-call fragments per index. */
export interface ToolCallBuffer {
  add(fragments: readonly JsonObject[]): void;
  /** The complete calls in index order; the buffer is then empty. */
  drain(): BufferedCall[];
}

/** A fresh tool-call buffer. */
export function toolCallBuffer(): ToolCallBuffer {
  const calls = new Map<number, BufferedCall>();
  return {
    add(fragments) {
      for (const tc of fragments) {
        const index = typeof tc.index === "number" ? tc.index : calls.size;
        const call = calls.get(index) ?? { index, id: "", name: "", args: "", custom: false };
        if (tc.type === "custom" || isObject(tc.custom)) call.custom = true;
        const fn = isObject(tc.custom) ? tc.custom : isObject(tc.function) ? tc.function : {};
        if (typeof tc.id === "string" && tc.id) call.id = tc.id;
        if (typeof fn.name === "string" && fn.name) call.name = fn.name;
        const args = fn.input ?? fn.arguments;
        if (typeof args === "string") call.args += args;
        calls.set(index, call);
      }
    },
    drain() {
      const out = [...calls.values()].sort((a, b) => a.index - b.index);
      calls.clear();
      return out;
    },
  };
}
