/**
 * @module A scripted model behind the fake upstream, for tool loops: it speaks Anthropic Messages and Chat
 * Completions (streamed or not), and answers each turn with the script's next step, a call to a tool the request
 * offered or a text, chosen by how many tool results the conversation holds. Real clients (Codex, Claude Code) and
 * tests drive it through the gateway.
 */
import type { Responder, SeenRequest } from "./_fake_upstream.ts";

/** One turn of the script: call a tool (JSON arguments, or `raw` text for a freeform tool), or answer with text. */
export type Step = { tool: string; args?: Record<string, unknown>; raw?: string } | { text: string };

type Json = Record<string, unknown>;

/** The next step for a conversation: the one after as many steps as there are tool results in it. */
function nextStep(script: Step[], results: number): Step {
  return script[results] ?? { text: "The script has no more steps." };
}

/** How a tool was offered: its name upstream, and whether it is a native `custom` tool or a one-string function. */
interface Offered {
  name: string;
  native: boolean;
}

/** The offered tool whose name is `name` or ends in `__name` (a flattened namespace). */
function findTool(names: Offered[], name: string): Offered | undefined {
  return names.find((t) => t.name === name) ?? names.find((t) => t.name.endsWith(`__${name}`));
}

/** A step's arguments as the offered tool takes them: a freeform tool's raw text goes in its one `input` string. */
function argumentsOf(step: { args?: Json; raw?: string }): Json {
  return step.raw !== undefined ? { input: step.raw } : step.args ?? {};
}

/** `text` in `parts` pieces of about the same length (one empty piece for no text), as deltas stream it. */
export function cut(text: string, parts: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [""];
}

/** An SSE answer: Anthropic and the Responses API name each event after its type, chat does not and ends with [DONE]. */
export function sse(events: Json[], named: boolean): Response {
  const text = events.map((e) => `${named ? `event: ${e.type}\n` : ""}data: ${JSON.stringify(e)}\n\n`).join("");
  return new Response(named ? text : `${text}data: [DONE]\n\n`, { headers: { "content-type": "text/event-stream" } });
}

const ANTHROPIC_USAGE = {
  input_tokens: 20,
  output_tokens: 5,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

/** The scripted answer to an Anthropic Messages request. */
function anthropicAnswer(body: Json, script: Step[]): Response {
  const messages = (body.messages ?? []) as Json[];
  const results = messages.flatMap((m) => Array.isArray(m.content) ? m.content as Json[] : [])
    .filter((b) => b.type === "tool_result").length;
  const offered = ((body.tools ?? []) as Json[]).map((t) => ({ name: String(t.name), native: false }));
  let step = offered.length > 0 ? nextStep(script, results) : { text: "ok" };
  const tool = "tool" in step ? findTool(offered, step.tool) : undefined;
  if ("tool" in step && !tool) step = { text: `The tool ${step.tool} was not offered.` };
  const block = "text" in step
    ? { type: "text", text: step.text }
    : { type: "tool_use", id: `toolu_script_${results}`, name: tool!.name, input: argumentsOf(step) };
  const stop = "text" in step ? "end_turn" : "tool_use";
  const message = { id: `msg_script_${results}`, type: "message", role: "assistant", model: body.model };
  if (body.stream !== true) {
    return Response.json({
      ...message,
      content: [block],
      stop_reason: stop,
      stop_sequence: null,
      usage: ANTHROPIC_USAGE,
    });
  }
  const deltas = block.type === "text"
    ? cut(String(block.text), 3).map((text) => ({ type: "text_delta", text }))
    : cut(JSON.stringify(block.input), 4).map((partial_json) => ({ type: "input_json_delta", partial_json }));
  const start = block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} };
  return sse([
    { type: "message_start", message: { ...message, content: [], stop_reason: null, usage: ANTHROPIC_USAGE } },
    { type: "content_block_start", index: 0, content_block: start },
    ...deltas.map((delta) => ({ type: "content_block_delta", index: 0, delta })),
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } },
    { type: "message_stop" },
  ], true);
}

/** The chat tools a request offered, functions and native `custom` tools alike. */
function chatOffered(body: Json): Offered[] {
  return ((body.tools ?? []) as Json[]).map((t) => {
    const inner = (t.function ?? t.custom ?? {}) as Json;
    return { name: String(inner.name), native: t.type === "custom" };
  });
}

/** The scripted answer to a Chat Completions request. */
function chatAnswer(body: Json, script: Step[]): Response {
  const messages = (body.messages ?? []) as Json[];
  const results = messages.filter((m) => m.role === "tool").length;
  const offered = chatOffered(body);
  let step = offered.length > 0 ? nextStep(script, results) : { text: "ok" };
  const tool = "tool" in step ? findTool(offered, step.tool) : undefined;
  if ("tool" in step && !tool) step = { text: `The tool ${step.tool} was not offered.` };
  const id = `call_script_${results}`;
  let call: Json | undefined;
  if ("tool" in step && tool!.native) {
    call = { id, type: "custom", custom: { name: tool!.name, input: step.raw ?? "" } };
  } else if ("tool" in step) {
    call = { id, type: "function", function: { name: tool!.name, arguments: JSON.stringify(argumentsOf(step)) } };
  }
  const finish = call ? "tool_calls" : "stop";
  const usage = { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 };
  const head = { id: `chatcmpl-script-${results}`, object: "chat.completion", created: 1767225600, model: body.model };
  if (body.stream !== true) {
    const message = call
      ? { role: "assistant", content: null, tool_calls: [call] }
      : { role: "assistant", content: (step as { text: string }).text };
    return Response.json({ ...head, choices: [{ index: 0, message, finish_reason: finish }], usage });
  }
  const chunk = (delta: Json, finish_reason: string | null = null) => ({
    ...head,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason }],
  });
  const pieces = !call
    ? cut((step as { text: string }).text, 3).map((content) => chunk({ content }))
    : call.type === "custom"
    ? cut(String((call.custom as Json).input), 4).map((input, i) =>
      chunk({
        tool_calls: [
          i === 0 ? { index: 0, ...call, custom: { ...call.custom as Json, input } } : { index: 0, custom: { input } },
        ],
      })
    )
    : cut(String((call.function as Json).arguments), 4).map((args, i) =>
      chunk({
        tool_calls: [
          i === 0
            ? { index: 0, ...call, function: { ...call.function as Json, arguments: args } }
            : { index: 0, function: { arguments: args } },
        ],
      })
    );
  return sse(
    [chunk({ role: "assistant", content: "" }), ...pieces, chunk({}, finish), { ...head, choices: [], usage }],
    false,
  );
}

/** Responders for the fake upstream's Anthropic and chat routes that follow `script`. */
export function scriptedModel(script: Step[]): { anthropic: Responder; chat: Responder } {
  return {
    anthropic: (seen: SeenRequest) => anthropicAnswer(seen.body ?? {}, script),
    chat: (seen: SeenRequest) => chatAnswer(seen.body ?? {}, script),
  };
}
