/**
 * @module Writes an OpenAI Responses answer, streamed or whole, from content as it arrives: output items with
 * their full event sequence, contiguous `sequence_number`s from 0, and a terminal event carrying `response.id`
 * and integer usage (see docs/protocols.md, "Responses streams"). Both Responses translators drive it.
 */
import { GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import type { JsonObject } from "../core/types.ts";
import { type TokenCounts, withRecorded } from "../core/usage.ts";
import type { TranslateContext } from "./identity.ts";
import { freeformInput } from "./freeform_tools.ts";
import type { ClientTool, ResponsesState } from "./responses_tools.ts";
import { finishFromStop, responsesUsage, toolArgumentsText } from "./shared.ts";

/** How the upstream's turn ended, in Responses terms. */
export type ResponsesEnd = "completed" | "max_output_tokens" | "content_filter";

/** Incremental writer of one response's events. */
export interface ResponsesWriter {
  /** `response.created` and `response.in_progress`, once; every other event starts the response first if needed. */
  start(): SseMessage[];
  /** Reasoning summary text; opens a reasoning item if none is open. */
  reasoning(delta: string): SseMessage[];
  /** Sets the open reasoning item's `encrypted_content`, opening an empty one if needed, and closes it. */
  reasoningSealed(encrypted: string): SseMessage[];
  /** Output text; opens a message item if none is open. */
  text(delta: string): SseMessage[];
  /** Opens a call item: `function_call` (with its `namespace` if any), or `custom_tool_call` for a freeform tool. */
  callStart(callId: string, tool: ClientTool): SseMessage[];
  /** Argument text of the open function call, or raw input of the open freeform call. */
  callArguments(delta: string): SseMessage[];
  /** Closes whatever item is open. */
  close(): SseMessage[];
  /** Closes the open item and ends the response. */
  finish(end: ResponsesEnd, usage: TokenCounts): SseMessage[];
  /** `response.failed` then `error`: Codex reads the first, the SDK throws on the second. */
  fail(err: GatewayError): SseMessage[];
  /** The whole response object as it stands (used for non-streamed answers). */
  response(): JsonObject;
}

type Open =
  | { kind: "reasoning"; item: JsonObject; text: string }
  | { kind: "message"; item: JsonObject; text: string }
  | { kind: "call"; item: JsonObject };

/** A writer for one response; item ids derive from the response id, so they are unique when it is. */
export function responsesWriter(ctx: TranslateContext): ResponsesWriter {
  const id = ctx.responseId ?? `resp_${ctx.requestId.replace(/^req_/, "")}`;
  const output: JsonObject[] = [];
  let sequence = 0;
  let open: Open | undefined;
  let status = "in_progress";
  let usage: JsonObject | null = null;
  let incomplete: JsonObject | null = null;
  let error: JsonObject | null = null;
  let started = false;
  const createdAt = Math.floor(ctx.now() / 1000);

  function emit(type: string, fields: JsonObject): SseMessage {
    return { event: type, data: JSON.stringify({ type, ...fields, sequence_number: sequence++ }) };
  }
  /**
   * An event kept as its value and serialized only when read (as it is sent, a piece at a time when large): the
   * events that repeat a whole item or the whole response would each hold all of its text once serialized, and a
   * large answer must not be held in several such copies at once. Only what is final by then is emitted so: a closed
   * item, the finished response.
   */
  function emitWhole(type: string, fields: JsonObject): SseMessage {
    const payload = { type, ...fields, sequence_number: sequence++ };
    return {
      event: type,
      payload,
      get data() {
        return JSON.stringify(payload);
      },
    };
  }
  function response(): JsonObject {
    return {
      id,
      object: "response",
      created_at: createdAt,
      status,
      model: ctx.model,
      output,
      usage,
      error,
      incomplete_details: incomplete,
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
    };
  }
  function itemId(prefix: string): string {
    return `${prefix}_${id.slice(5)}_${output.length}`;
  }
  function start(): SseMessage[] {
    if (started) return [];
    started = true;
    const out = [
      emit("response.created", { response: response() }),
      emit("response.in_progress", { response: response() }),
    ];
    // Items made before the model answered (a compaction) come first, each already whole.
    for (const item of ctx.leading ?? []) {
      output.push(item);
      const where = { output_index: output.length - 1, item };
      out.push(emit("response.output_item.added", where), emit("response.output_item.done", where));
    }
    return out;
  }
  function add(next: Open): SseMessage[] {
    const out = start();
    open = next;
    output.push(next.item);
    out.push(emit("response.output_item.added", { output_index: output.length - 1, item: { ...next.item } }));
    return out;
  }
  function close(): SseMessage[] {
    if (!open) return [];
    const current = open;
    open = undefined;
    const index = output.length - 1;
    const item = current.item;
    const base = { item_id: item.id, output_index: index };
    const out: SseMessage[] = [];
    if (current.kind === "reasoning" && current.text) {
      const part = { type: "summary_text", text: current.text };
      out.push(emitWhole("response.reasoning_summary_text.done", { ...base, summary_index: 0, text: current.text }));
      out.push(emitWhole("response.reasoning_summary_part.done", { ...base, summary_index: 0, part }));
      item.summary = [part];
    } else if (current.kind === "message") {
      const part = { type: "output_text", text: current.text, annotations: [] };
      const where = { ...base, content_index: 0 };
      out.push(emitWhole("response.output_text.done", { ...where, text: current.text, logprobs: [] }));
      out.push(emitWhole("response.content_part.done", { ...where, part }));
      item.content = [part];
    } else if (current.kind === "call" && item.type === "custom_tool_call") {
      out.push(emitWhole("response.custom_tool_call_input.done", { ...base, input: item.input }));
    } else if (current.kind === "call") {
      // A call without arguments still hands the client parseable JSON.
      if (!item.arguments) item.arguments = "{}";
      out.push(emitWhole("response.function_call_arguments.done", { ...base, arguments: item.arguments }));
    }
    if (current.kind !== "reasoning") item.status = "completed";
    out.push(emitWhole("response.output_item.done", { output_index: index, item }));
    return out;
  }
  function openReasoning(): SseMessage[] {
    if (open?.kind === "reasoning") return [];
    return [
      ...close(),
      ...add({ kind: "reasoning", item: { type: "reasoning", id: itemId("rs"), summary: [] }, text: "" }),
    ];
  }

  return {
    start,
    reasoning(delta) {
      const out = openReasoning();
      const current = open as Extract<Open, { kind: "reasoning" }>;
      const base = { item_id: current.item.id, output_index: output.length - 1, summary_index: 0 };
      if (!current.text) {
        out.push(emit("response.reasoning_summary_part.added", { ...base, part: { type: "summary_text", text: "" } }));
      }
      current.text += delta;
      out.push(emit("response.reasoning_summary_text.delta", { ...base, delta }));
      return out;
    },
    reasoningSealed(encrypted) {
      const out = openReasoning();
      (open as Open).item.encrypted_content = encrypted;
      return [...out, ...close()];
    },
    text(delta) {
      const out: SseMessage[] = [];
      if (open?.kind !== "message") {
        out.push(...close());
        const item = { type: "message", id: itemId("msg"), role: "assistant", status: "in_progress", content: [] };
        out.push(...add({ kind: "message", item, text: "" }));
        const part = { type: "output_text", text: "", annotations: [] };
        out.push(
          emit("response.content_part.added", {
            item_id: item.id,
            output_index: output.length - 1,
            content_index: 0,
            part,
          }),
        );
      }
      const current = open as Extract<Open, { kind: "message" }>;
      current.text += delta;
      const where = { item_id: current.item.id, output_index: output.length - 1, content_index: 0 };
      out.push(emit("response.output_text.delta", { ...where, delta, logprobs: [] }));
      return out;
    },
    callStart(callId, tool) {
      const namespace = tool.namespace === undefined ? {} : { namespace: tool.namespace };
      const item = tool.custom
        ? { type: "custom_tool_call", id: itemId("ctc"), call_id: callId, ...namespace, name: tool.name, input: "" }
        : { type: "function_call", id: itemId("fc"), call_id: callId, ...namespace, name: tool.name, arguments: "" };
      return [...close(), ...add({ kind: "call", item: { ...item, status: "in_progress" } })];
    },
    callArguments(delta) {
      if (open?.kind !== "call" || !delta) return [];
      const custom = open.item.type === "custom_tool_call";
      const field = custom ? "input" : "arguments";
      open.item[field] = String(open.item[field]) + delta;
      const type = custom ? "response.custom_tool_call_input.delta" : "response.function_call_arguments.delta";
      return [emit(type, { item_id: open.item.id, output_index: output.length - 1, delta })];
    },
    close,
    finish(end, u) {
      const out = [...start(), ...close()];
      // The client is charged for a compaction made for this answer too: its usage says so.
      usage = responsesUsage(withRecorded(u, ctx.leadingUsage));
      status = end === "completed" ? "completed" : "incomplete";
      if (end !== "completed") incomplete = { reason: end };
      out.push(
        emitWhole(status === "completed" ? "response.completed" : "response.incomplete", { response: response() }),
      );
      return out;
    },
    fail(err) {
      status = "failed";
      const code = err.code ?? "server_error";
      // Internal details stay in the log, as in every other error the gateway renders.
      const message = err.kind === "internal" ? "Internal error" : err.message;
      error = { code, message };
      return [
        ...start(),
        emitWhole("response.failed", { response: response() }),
        emit("error", { code, message, param: err.param }),
      ];
    },
    response,
  };
}

/** The end a chat finish reason stands for. */
export function endFromFinish(finish: unknown): ResponsesEnd {
  if (finish === "length") return "max_output_tokens";
  return finish === "content_filter" ? "content_filter" : "completed";
}

/** Through the chat finish reason, so the stop-reason table stays in one place (shared.ts). */
export function endFromStop(stop: unknown): ResponsesEnd {
  return endFromFinish(finishFromStop(stop));
}

/**
 * One whole tool call from the upstream, under the client's tool: a function call with its arguments, or a freeform
 * call whose raw input is read out of the function form (or taken as it is from a native `custom` call).
 */
export function writeCall(
  writer: ResponsesWriter,
  call: { id: string; name: string; args: unknown; native?: boolean },
  { tools }: ResponsesState,
) {
  const client = tools.clientTool(call.name);
  const tool = call.native ? { ...client, custom: true } : client;
  let text: string;
  if (call.native) text = String(call.args ?? "");
  else if (tool.custom) text = freeformInput(call.args);
  else text = typeof call.args === "string" ? toolArgumentsText(call.args) : JSON.stringify(call.args ?? {});
  return [...writer.callStart(call.id, tool), ...writer.callArguments(text)];
}

/** The error of an upstream stream that stopped before its answer's end. */
export function cutShort(): GatewayError {
  return new GatewayError("upstream", "Upstream stream ended before the answer was complete");
}
