/**
 * @module Where each client protocol's stream carries a model's text, for the guardrails: every text block, choice,
 * output item and candidate is a channel of its own (text and tool-call arguments apart), scanned as its deltas pass;
 * what a channel still holds goes out in one more delta just before the event that ends it, and what an event repeats
 * whole (a Responses `.done`, `response.completed`, Gemini's function calls) is scanned whole.
 */
import { guardValue } from "../core/guard_walk.ts";
import type { SseMessage } from "../core/sse.ts";
import { type GuardRun, type ScanRule, type TextChannel, textChannel } from "../core/text_scan.ts";
import type { Protocol } from "../core/types.ts";

/** Rewrites one stream's events. */
export interface EventGuard {
  next(event: string | undefined, value: Record<string, unknown>): { event?: string; value: unknown }[];
  /** What channels still hold when the stream ends without closing them (chat before `[DONE]`, Gemini at its end). */
  end?(): { event?: string; value: unknown }[];
}

type Json = Record<string, unknown>;

/** The channels of one stream, by key, made as they first carry text. */
function channels(rules: readonly ScanRule[], run: GuardRun) {
  const open = new Map<string, TextChannel>();
  return {
    push(key: string, text: string, json = false): string {
      let channel = open.get(key);
      if (!channel) open.set(key, channel = textChannel(rules, run, { scope: "output", json }));
      return channel.push(text);
    },
    end(key: string): string {
      const channel = open.get(key);
      open.delete(key);
      return channel?.end() ?? "";
    },
    keys: () => [...open.keys()],
  };
}

/** The same run for what repeats text already scanned in deltas: its hits are not counted twice. */
function quiet(run: GuardRun): GuardRun {
  return { hits: [], restores: run.restores, tag: run.tag };
}

function anthropic(rules: readonly ScanRule[], run: GuardRun): EventGuard {
  const open = channels(rules, run);
  const fields: Record<string, [string, boolean]> = {
    text_delta: ["text", false],
    input_json_delta: ["partial_json", true],
    thinking_delta: ["thinking", false],
  };
  const kinds = new Map<number, string>();
  return {
    next(event, value) {
      const index = value.index as number;
      if (value.type === "content_block_delta") {
        const delta = value.delta as Json;
        const field = fields[delta.type as string];
        if (!field) return [{ event, value }];
        kinds.set(index, delta.type as string);
        const text = open.push(String(index), delta[field[0]] as string, field[1]);
        if (text === delta[field[0]]) return [{ event, value }];
        return [{ event, value: { ...value, delta: { ...delta, [field[0]]: text } } }];
      }
      if (value.type === "content_block_stop") {
        const rest = open.end(String(index));
        const type = kinds.get(index);
        if (rest === "" || !type) return [{ event, value }];
        const delta = { type, [fields[type][0]]: rest };
        return [{ event: "content_block_delta", value: { type: "content_block_delta", index, delta } }, {
          event,
          value,
        }];
      }
      if (value.type === "content_block_start") {
        return [{ event, value: guardValue(value, rules, run, { scope: "output" }) }];
      }
      return [{ event, value }];
    },
  };
}

function chat(rules: readonly ScanRule[], run: GuardRun): EventGuard {
  const open = channels(rules, run);
  let envelope: Json = {};
  return {
    next(event, value) {
      const choices = value.choices as Json[] | undefined;
      if (!Array.isArray(choices)) return [{ event, value }];
      const out = choices.map((choice) => {
        const at = choice.index as number;
        const delta = { ...(choice.delta as Json ?? {}) };
        if (typeof delta.content === "string") delta.content = open.push(`c${at}`, delta.content);
        const calls = Array.isArray(delta.tool_calls) ? (delta.tool_calls as Json[]) : undefined;
        if (calls) {
          delta.tool_calls = calls.map((call) => {
            const fn = call.function as Json | undefined;
            if (typeof fn?.arguments !== "string") return call;
            return { ...call, function: { ...fn, arguments: open.push(`t${at}.${call.index}`, fn.arguments, true) } };
          });
        }
        if (choice.finish_reason) {
          // The choice ends here: what its channels hold goes out with this chunk.
          const rest = open.end(`c${at}`);
          if (rest !== "") delta.content = (typeof delta.content === "string" ? delta.content : "") + rest;
          for (const key of open.keys().filter((key) => key.startsWith(`t${at}.`))) {
            const arguments_ = open.end(key);
            if (arguments_ === "") continue;
            const index = Number(key.slice(key.indexOf(".") + 1));
            delta.tool_calls = [...(delta.tool_calls as Json[] ?? []), { index, function: { arguments: arguments_ } }];
          }
        }
        return { ...choice, delta };
      });
      envelope = { id: value.id, object: value.object, created: value.created, model: value.model };
      return [{ event, value: { ...value, choices: out } }];
    },
    end() {
      const choices = open.keys().map((key) => {
        const rest = open.end(key);
        if (key.startsWith("c")) return { index: Number(key.slice(1)), delta: { content: rest }, finish_reason: null };
        const [at, index] = key.slice(1).split(".").map(Number);
        return { index: at, delta: { tool_calls: [{ index, function: { arguments: rest } }] }, finish_reason: null };
      });
      return choices.length === 0 ? [] : [{ value: { ...envelope, choices } }];
    },
  };
}

/** Responses events whose `delta` is a model's text, and the `.done` event that ends each. */
const RESPONSES_DELTAS: Record<string, [done: string, json: boolean]> = {
  "response.output_text.delta": ["response.output_text.done", false],
  "response.function_call_arguments.delta": ["response.function_call_arguments.done", true],
  "response.reasoning_text.delta": ["response.reasoning_text.done", false],
  "response.reasoning_summary_text.delta": ["response.reasoning_summary_text.done", false],
};
const RESPONSES_DONE = new Map(Object.entries(RESPONSES_DELTAS).map(([delta, [done]]) => [done, delta]));

function responses(rules: readonly ScanRule[], run: GuardRun): EventGuard {
  const open = channels(rules, run);
  const again = quiet(run);
  // Events the guard adds shift the numbers of all that follow.
  let added = 0;
  const key = (value: Json) =>
    `${value.type}:${value.output_index}:${value.content_index ?? value.summary_index ?? ""}`;
  const numbered = (event: string | undefined, value: Json) =>
    typeof value.sequence_number === "number" && added > 0
      ? { event, value: { ...value, sequence_number: value.sequence_number + added } }
      : { event, value };
  return {
    next(event, value) {
      const type = value.type as string;
      const delta = RESPONSES_DELTAS[type];
      if (delta && typeof value.delta === "string") {
        const text = open.push(key(value), value.delta, delta[1]);
        return [numbered(event, text === value.delta ? value : { ...value, delta: text })];
      }
      const ended = RESPONSES_DONE.get(type);
      const out: { event?: string; value: unknown }[] = [];
      if (ended) {
        const rest = open.end(key({ ...value, type: ended }));
        if (rest !== "") {
          const { text: _text, arguments: _arguments, ...common } = value;
          out.push(numbered(ended, { ...common, type: ended, delta: rest }));
          added++;
        }
      }
      out.push(numbered(event, guardValue(value, rules, again, { scope: "output" })));
      return out;
    },
  };
}

function gemini(rules: readonly ScanRule[], run: GuardRun): EventGuard {
  const open = channels(rules, run);
  return {
    next(event, value) {
      const candidates = value.candidates as Json[] | undefined;
      if (!Array.isArray(candidates)) return [{ event, value }];
      const out = candidates.map((candidate, i) => {
        const at = (candidate.index as number | undefined) ?? i;
        const content = candidate.content as Json | undefined;
        const parts = (Array.isArray(content?.parts) ? content.parts as Json[] : []).map((part) => {
          if (typeof part.text === "string") {
            return { ...part, text: open.push(`${at}:${part.thought === true}`, part.text) };
          }
          return guardValue(part, rules, run, { scope: "output" });
        });
        if (candidate.finishReason) {
          for (const thought of [false, true]) {
            const rest = open.end(`${at}:${thought}`);
            if (rest !== "") parts.push(thought ? { text: rest, thought } : { text: rest });
          }
        }
        return content ? { ...candidate, content: { ...content, parts } } : candidate;
      });
      return [{ event, value: { ...value, candidates: out } }];
    },
    end() {
      const candidates = open.keys().map((key) => {
        const [at, thought] = key.split(":");
        const part = thought === "true" ? { text: open.end(key), thought: true } : { text: open.end(key) };
        return { index: Number(at), content: { role: "model", parts: [part] } };
      });
      return candidates.length === 0 ? [] : [{ value: { candidates } }];
    },
  };
}

/** The event guard of a client protocol's stream. */
export function eventGuard(protocol: Protocol, rules: readonly ScanRule[], run: GuardRun): EventGuard {
  if (protocol === "anthropic") return anthropic(rules, run);
  if (protocol === "openai-chat") return chat(rules, run);
  if (protocol === "openai-responses") return responses(rules, run);
  return gemini(rules, run);
}

/** An event as the guard gives it, ready to go out. */
export function eventOf(event: string | undefined, value: unknown): SseMessage {
  return { event, data: JSON.stringify(value) };
}
