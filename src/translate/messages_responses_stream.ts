/**
 * @module OpenAI Responses events -> Anthropic Messages events (see docs/protocols.md, "Anthropic Messages client,
 * Responses upstream"). One block is open at a time. Text and reasoning summaries stream as they come; a reasoning
 * item's signature (the item itself) goes out just before its block stops, once the item is done, since its encrypted
 * content comes last; a call goes out whole once its item is done, so its input is always one valid JSON object.
 */
import { GatewayError } from "../core/errors.ts";
import type { SseMessage, StreamStep } from "../core/sse.ts";
import type { JsonObject } from "../core/types.ts";
import {
  partText,
  type ResponsesAnswerState,
  stopOfResponse,
  toolUseOf,
  usageOfResponse,
} from "./messages_responses_parts.ts";
import { reasoningBlock } from "./responses_reasoning.ts";
import { readResponsesEvent } from "../protocols/responses.ts";

function event(data: JsonObject): SseMessage {
  return { event: String(data.type), data: JSON.stringify(data) };
}

/** The block open now: what it shows, the output item it belongs to, and the summary part it is at. */
interface OpenBlock {
  kind: "text" | "thinking";
  item: number;
  /** The reasoning part (`s<summary index>` or `c<content index>`) being written. */
  part?: string;
}

/** Responses events in, Anthropic events out; the ending is written when the response completes. */
export function responsesToMessagesStream(state: ResponsesAnswerState): StreamStep {
  const { ctx } = state;
  let started = false;
  let finished = false;
  let index = -1;
  let open: OpenBlock | undefined;
  let called = false;
  let refused = false;
  /** Output items whose text has gone out in deltas, so their finished item is not shown again. */
  const shown = new Set<number>();

  function start(response: JsonObject | undefined): SseMessage[] {
    if (started) return [];
    started = true;
    const id = typeof response?.id === "string" ? response.id : `msg_${ctx.requestId}`;
    const usage = {
      input_tokens: state.promptTokens,
      output_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    const message = { id, type: "message", role: "assistant", model: ctx.model, content: [], usage };
    return [event({ type: "message_start", message: { ...message, stop_reason: null, stop_sequence: null } })];
  }
  function close(): SseMessage[] {
    if (!open) return [];
    open = undefined;
    return [event({ type: "content_block_stop", index })];
  }
  function begin(block: JsonObject): SseMessage[] {
    const out = close();
    index++;
    return [...out, event({ type: "content_block_start", index, content_block: block })];
  }
  function deltaOf(d: JsonObject): SseMessage {
    return event({ type: "content_block_delta", index, delta: d });
  }
  /** Text or thinking for output item `item`, in the block open for it, or a new one. */
  function delta(kind: OpenBlock["kind"], item: number, text: string, part?: string): SseMessage[] {
    if (!text) return [];
    shown.add(item);
    const out: SseMessage[] = [];
    if (open?.kind !== kind || open.item !== item) {
      out.push(
        ...begin(kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" }),
      );
      open = { kind, item, part };
    } else if (part !== open.part) {
      // A new summary part of the same reasoning reads as a new paragraph.
      open.part = part;
      out.push(deltaOf({ type: "thinking_delta", thinking: "\n\n" }));
    }
    out.push(deltaOf(kind === "text" ? { type: "text_delta", text } : { type: "thinking_delta", thinking: text }));
    return out;
  }
  /** A block whose content is known whole: start, its content, stop. */
  function whole(block: JsonObject): SseMessage[] {
    if (block.type === "text") {
      return [...begin({ type: "text", text: "" }), deltaOf({ type: "text_delta", text: block.text }), stopNow()];
    }
    if (block.type === "tool_use") {
      const { input, ...rest } = block;
      const json = { type: "input_json_delta", partial_json: JSON.stringify(input) };
      return [...begin({ ...rest, input: {} }), deltaOf(json), stopNow()];
    }
    if (block.type !== "thinking") return [...begin(block), stopNow()];
    const out = [...begin({ type: "thinking", thinking: "", signature: "" })];
    out.push(deltaOf({ type: "thinking_delta", thinking: block.thinking }));
    if (block.signature) out.push(deltaOf({ type: "signature_delta", signature: block.signature }));
    return [...out, stopNow()];
  }
  /** The stop of a block written whole, which was never the open one. */
  function stopNow(): SseMessage {
    return event({ type: "content_block_stop", index });
  }
  /** A finished reasoning item: its signature closes the block its summary streamed into, or it comes whole. */
  function reasoningDone(item: JsonObject, at: number): SseMessage[] {
    const block = reasoningBlock(item);
    // What carries the item: the signature of its thinking, or the data of its redacted block ("" when unsealed).
    const signature = String((block?.type === "redacted_thinking" ? block.data : block?.signature) ?? "");
    if (open?.kind === "thinking" && open.item === at) {
      return [...(signature ? [deltaOf({ type: "signature_delta", signature })] : []), ...close()];
    }
    // Its summary went out in a block another item's output closed: the item still goes back, unseen.
    if (shown.has(at)) return signature ? whole({ type: "redacted_thinking", data: signature }) : [];
    return block ? whole(block) : [];
  }
  /** A finished message item: its text went out in deltas, or goes out now. */
  function messageDone(item: JsonObject, at: number): SseMessage[] {
    const out: SseMessage[] = [];
    for (const part of Array.isArray(item.content) ? item.content : []) {
      const { text, refusal } = partText(part);
      refused ||= refusal;
      if (text && !shown.has(at)) out.push(...whole({ type: "text", text }));
    }
    return open?.item === at ? [...out, ...close()] : out;
  }
  function itemDone(item: JsonObject | undefined, at: number): SseMessage[] {
    if (!item) return [];
    if (item.type === "reasoning") return reasoningDone(item, at);
    if (item.type === "message") return messageDone(item, at);
    if (item.type !== "function_call") return [];
    called = true;
    return whole(toolUseOf(item, state));
  }
  function complete(response: JsonObject = {}): SseMessage[] {
    finished = true;
    const out = close();
    out.push(event({
      type: "message_delta",
      delta: { stop_reason: stopOfResponse(response, called, refused), stop_sequence: null },
      usage: usageOfResponse(response),
    }));
    out.push(event({ type: "message_stop" }));
    return out;
  }

  return {
    next(message) {
      const data = readResponsesEvent(message);
      if (!data || finished) return [];
      const out = start(data.response);
      const at = data.output_index;
      switch (data.type) {
        case "response.output_text.delta":
          return [...out, ...delta("text", at, data.delta)];
        case "response.refusal.delta":
          refused = true;
          return [...out, ...delta("text", at, data.delta)];
        case "response.reasoning_summary_text.delta":
          return [...out, ...delta("thinking", at, data.delta, `s${data.summary_index}`)];
        case "response.reasoning_text.delta":
          return [...out, ...delta("thinking", at, data.delta, `c${data.content_index}`)];
        case "response.output_item.done":
          return [...out, ...itemDone(data.item, at)];
        case "response.completed":
        case "response.incomplete":
          return [...out, ...complete(data.response)];
        default:
          return out;
      }
    },
    end() {
      if (finished) return [];
      throw new GatewayError("upstream", "Upstream stream ended before response.completed");
    },
  };
}
