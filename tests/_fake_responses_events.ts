/**
 * @module The fake Responses API's model (tests/_fake_responses_api.ts): one turn's answer as a whole response and
 * as the event stream the real API sends for it, in its order: reasoning first when asked for (its summary when
 * `reasoning.summary` is set, its `encrypted_content` when `include` asks for it), then the script's step (a call to
 * an offered tool, or a text); one `compaction` item alone for a trailing `compaction_trigger`, or in front of the
 * answer when `context_management` finds the input past its threshold.
 */
import { createHmac } from "node:crypto";
import type { Json } from "./_responses.ts";
import { cut, type Step } from "./_scripted_model.ts";

/** `encrypted_content` for `payload`, sealed with `secret`. */
export function seal(secret: string, payload: Json): string {
  const text = JSON.stringify(payload);
  const mac = createHmac("sha256", secret).update(text).digest("hex");
  return btoa(JSON.stringify({ text, mac }));
}

/** What `sealed` holds when `secret` sealed it, else undefined. */
export function unseal(secret: string, sealed: unknown): Json | undefined {
  if (typeof sealed !== "string") return undefined;
  try {
    const { text, mac } = JSON.parse(atob(sealed));
    if (createHmac("sha256", secret).update(text).digest("hex") !== mac) return undefined;
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The input as items; a string is one user message. */
export function itemsOf(input: unknown): Json[] {
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  return Array.isArray(input) ? input : [];
}

/** Whether `item` is a tool's output: a step of the script done. */
export function isOutput(item: Json): boolean {
  return item.type === "function_call_output" || item.type === "custom_tool_call_output";
}

/** What one answer needs: its id, the deployment's secret and the script. */
export interface AnswerSetup {
  id: string;
  secret: string;
  script: Step[];
}

/** The offered tools by name: functions, and freeform (`custom`) tools. */
function offered(body: Json): Map<string, "function" | "custom"> {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return new Map(
    tools.filter((t: Json) => t.type === "function" || t.type === "custom")
      .map((t: Json) => [String(t.name), t.type]),
  );
}

/** The step's output item: a call to an offered tool, or a message. */
function stepItem(body: Json, step: Step, n: number, setup: AnswerSetup): Json {
  const tools = offered(body);
  const name = "tool" in step
    ? [...tools.keys()].find((t) => t === step.tool || t.endsWith(`__${step.tool}`) || t.endsWith(`_${step.tool}`))
    : undefined;
  if ("tool" in step && name && tools.get(name) === "custom") {
    return { type: "custom_tool_call", id: `ctc_${setup.id}`, call_id: `call_${n}`, name, input: step.raw ?? "" };
  }
  if ("tool" in step && name) {
    const args = JSON.stringify(step.raw !== undefined ? { input: step.raw } : step.args ?? {});
    return { type: "function_call", id: `fc_${setup.id}`, call_id: `call_${n}`, name, arguments: args };
  }
  const text = "text" in step ? step.text : `The tool ${step.tool} was not offered.`;
  return {
    type: "message",
    id: `msg_${setup.id}`,
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text, annotations: [] }],
  };
}

/** The answer's output items, in order. */
function outputItems(body: Json, setup: AnswerSetup): Json[] {
  const items = itemsOf(body.input);
  // The steps done: the tool outputs in the input, and those a compaction item in it stands for.
  const done = items.reduce(
    (sum, i) =>
      sum + (isOutput(i) ? 1 : i.type === "compaction" ? unseal(setup.secret, i.encrypted_content)?.done ?? 0 : 0),
    0,
  );
  const compaction = () => {
    const id = `cmp_${setup.id}`;
    return { type: "compaction", id, encrypted_content: seal(setup.secret, { id, n: items.length, done }) };
  };
  if (items.at(-1)?.type === "compaction_trigger") return [compaction()];
  const out: Json[] = [];
  const threshold = Array.isArray(body.context_management)
    ? body.context_management.find((c: Json) => c.type === "compaction")?.compact_threshold
    : undefined;
  if (typeof threshold === "number" && JSON.stringify(items).length / 4 > threshold) out.push(compaction());
  const step = offered(body).size > 0 ? setup.script[done] ?? { text: "The script is done." } : { text: "ok" };
  if (body.reasoning) {
    const id = `rs_${setup.id}`;
    const text = `Thinking about step ${done}.`;
    const wanted = Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content");
    out.push({
      type: "reasoning",
      id,
      summary: body.reasoning.summary ? [{ type: "summary_text", text }] : [],
      encrypted_content: wanted ? seal(setup.secret, { id, text }) : null,
    });
  }
  out.push(stepItem(body, step, done, setup));
  return out;
}

/** The answer to a create: the response and its events. */
export function responsesAnswer(body: Json, setup: AnswerSetup): { response: Json; events: Json[] } {
  const output = outputItems(body, setup);
  const input = Math.ceil(JSON.stringify(body.input ?? "").length / 4);
  const reasoning = output.some((i) => i.type === "reasoning") ? 5 : 0;
  const usage = {
    input_tokens: input,
    input_tokens_details: { cached_tokens: body.prompt_cache_key ? Math.floor(input / 2) : 0 },
    output_tokens: 10 + reasoning,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + 10 + reasoning,
  };
  const base = {
    id: setup.id,
    object: "response",
    created_at: 1767225600,
    model: body.model,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    tools: body.tools ?? [],
    store: body.store !== false,
  };
  const response = { ...base, status: "completed", output, usage };
  let seq = 0;
  const events: Json[] = [];
  const emit = (type: string, fields: Json) => events.push({ type, ...fields, sequence_number: seq++ });
  const opening = { ...base, status: "in_progress", output: [], usage: null };
  emit("response.created", { response: opening });
  emit("response.in_progress", { response: opening });
  output.forEach((item, output_index) => {
    const at = { item_id: item.id, output_index };
    if (item.type === "message") {
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
      const text = item.content[0].text;
      emit("response.content_part.added", { ...at, content_index: 0, part: { type: "output_text", text: "" } });
      for (const delta of cut(text, 3)) emit("response.output_text.delta", { ...at, content_index: 0, delta });
      emit("response.output_text.done", { ...at, content_index: 0, text });
      emit("response.content_part.done", { ...at, content_index: 0, part: item.content[0] });
    } else if (item.type === "reasoning") {
      emit("response.output_item.added", { output_index, item: { ...item, summary: [], encrypted_content: null } });
      item.summary.forEach((part: Json, summary_index: number) => {
        emit("response.reasoning_summary_part.added", { ...at, summary_index, part: { ...part, text: "" } });
        for (const delta of cut(part.text, 2)) {
          emit("response.reasoning_summary_text.delta", { ...at, summary_index, delta });
        }
        emit("response.reasoning_summary_text.done", { ...at, summary_index, text: part.text });
        emit("response.reasoning_summary_part.done", { ...at, summary_index, part });
      });
    } else if (item.type === "function_call") {
      emit("response.output_item.added", { output_index, item: { ...item, arguments: "", status: "in_progress" } });
      for (const delta of cut(item.arguments, 3)) emit("response.function_call_arguments.delta", { ...at, delta });
      emit("response.function_call_arguments.done", { ...at, arguments: item.arguments });
    } else if (item.type === "custom_tool_call") {
      emit("response.output_item.added", { output_index, item: { ...item, input: "" } });
      for (const delta of cut(item.input, 3)) emit("response.custom_tool_call_input.delta", { ...at, delta });
      emit("response.custom_tool_call_input.done", { ...at, input: item.input });
    } else {
      emit("response.output_item.added", { output_index, item });
    }
    emit("response.output_item.done", { output_index, item });
  });
  emit("response.completed", { response });
  return { response, events };
}
