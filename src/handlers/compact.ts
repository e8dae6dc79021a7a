/**
 * @module Compaction made by the gateway (see docs/protocols.md, "Compaction"): a `compaction_trigger` or a crossed
 * `compact_threshold` on POST /v1/responses, and POST /v1/responses/compact, each answered by asking the model for a
 * summary and sealing it into one `compaction` item; and a request that brings such an item back gets its summary
 * in its place, with what came before it dropped.
 */
import { GatewayError } from "../core/errors.ts";
import type { Usage } from "../core/exchange.ts";
import { estimatePromptTokens } from "../core/estimate.ts";
import { json } from "../core/http.ts";
import type { Principal } from "../core/principal.ts";
import { encodeSse, type SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { invalidField } from "../core/validation.ts";
import { inputItems } from "../conversations/resolve.ts";
import { SEALED_PREFIX } from "../conversations/seal.ts";
import { jsonBytes } from "../conversations/size.ts";
import { relay } from "../relay/relay.ts";
import type { RelayRequest } from "../relay/request.ts";
import {
  answerText,
  compactionItem,
  compactThreshold,
  latestCompaction,
  packSummary,
  SUMMARY_HEADER,
  summaryMessage,
  summaryRequest,
  triggerIndex,
  unpackSummary,
} from "../translate/compaction.ts";
import type { Deps, RequestContext } from "./context.ts";
import { type AnswerGuard, guardSummary } from "./guard.ts";

/** What a Responses request asks of compaction: a summary now (the trigger), or one past a prompt size. */
export type CompactionPlan = { kind: "trigger" } | { kind: "compact" } | { kind: "threshold"; tokens: number };

/** A POST /v1/responses/compact body as a create: its conversation fields, answered whole, nothing stored. */
export function compactBody(value: JsonObject): JsonObject {
  return { ...value, input: value.input ?? [], stream: false, store: false };
}

/**
 * The request's conversation with its latest compaction item opened: that item and everything before it but the
 * instructions become one message holding the summary. `own` is how many of the items are the client's own (the rest came from
 * `previous_response_id`), so a bad item is named where the client sent it. Also reads what compaction it asks for.
 */
export async function openCompaction(
  deps: Deps,
  { principal, body, own }: { principal: Principal; body: JsonObject; own: number },
): Promise<{ body: JsonObject; plan?: CompactionPlan }> {
  let items = inputItems(body.input);
  const start = items.length - own;
  const trigger = triggerIndex(items.slice(start), 0);
  if (trigger !== undefined) items = items.slice(0, -1);
  const threshold = compactThreshold(body);
  const plan: CompactionPlan | undefined = trigger !== undefined
    ? { kind: "trigger" }
    : threshold === undefined
    ? undefined
    : { kind: "threshold", tokens: threshold };
  const at = latestCompaction(items);
  if (at === -1) return { body: trigger === undefined ? body : { ...body, input: items }, plan };
  const field = at >= start ? `input[${at - start}].encrypted_content` : "previous_response_id";
  const summary = await openItem(deps, principal, items[at], field);
  return {
    body: { ...body, input: [...instructionsOf(items.slice(0, at)), summaryMessage(summary), ...items.slice(at + 1)] },
    plan,
  };
}

/**
 * The system and developer messages among `items`: instructions, not conversation, so they stay in force after a
 * compaction (a client such as Codex puts its current ones in front of the item it carries).
 */
function instructionsOf(items: readonly JsonObject[]): JsonObject[] {
  return items.filter((item) => item.type === "message" && (item.role === "system" || item.role === "developer"));
}

async function openItem(deps: Deps, principal: Principal, item: JsonObject, field: string): Promise<string> {
  const sealed = item.encrypted_content;
  if (typeof sealed !== "string" || !sealed) throw invalidField(field, "is required on a compaction item");
  if (!sealed.startsWith(SEALED_PREFIX)) {
    throw invalidField(field, "this compaction item was not made by this gateway, and its models cannot read it");
  }
  const opened = await deps.sealer.open(principal.token.id, sealed);
  const summary = opened === undefined ? undefined : unpackSummary(opened);
  if (summary === undefined) {
    throw invalidField(
      field,
      "this compaction item cannot be opened: it was changed, or made for another API key or under another " +
        "compaction key; send the conversation itself instead",
    );
  }
  return summary;
}

/** A summary made and sealed: the item, its text, the model's answer it came from, and what the summary call used. */
interface Summary {
  item: JsonObject;
  text: string;
  answer: JsonObject;
  usage?: Usage;
}

/**
 * Asks the model for the summary of `items`, through the relay (failover, usage, cost), and seals it. The summary
 * request is held in the request's share of the body budget, as its own body is.
 */
async function summarize(
  ctx: RequestContext,
  call: RelayRequest,
  { items, token, guard }: { items: readonly JsonObject[]; token: string; guard?: AnswerGuard },
): Promise<Summary | Response> {
  const { deps } = ctx;
  const body = summaryRequest(call.body, items);
  await ctx.holdBody().grow(jsonBytes(body));
  const res = await relay(deps, {
    ...call,
    body,
    bytes: undefined,
    size: call.size,
    watch: undefined,
    affinity: undefined,
    leading: undefined,
  });
  if (!res.ok) return res;
  const answer = await res.json() as JsonObject;
  // What the model wrote passes the output rules before it is sealed: the summary stands for the conversation later.
  const summary = guardSummary(answerText(answer), guard);
  if (!summary) {
    throw new GatewayError("upstream", `Model "${call.body.model}" wrote no summary to compact the conversation with`);
  }
  const sealed = await deps.sealer.seal(token, packSummary(summary));
  const id = `cmp_${String(answer.id ?? call.responseId ?? crypto.randomUUID()).replace(/^resp_/, "")}`;
  call.exchange.compaction = "gateway";
  return { item: compactionItem(id, sealed), text: summary, answer, usage: call.exchange.usage };
}

/**
 * POST /v1/responses that asks for compaction: with the trigger, one `compaction` item and nothing else; with a
 * crossed threshold, the item first and then the model's answer to the compacted conversation.
 */
export async function relayCompacting(
  ctx: RequestContext,
  call: RelayRequest,
  { plan, principal, guard }: { plan: CompactionPlan; principal: Principal; guard?: AnswerGuard },
): Promise<Response> {
  const { deps } = ctx;
  const items = inputItems(call.body.input);
  if (plan.kind === "threshold" && estimatePromptTokens(call.body) <= plan.tokens) return await relay(deps, call);
  if (items.length === 0) throw invalidField("input", "holds nothing to compact");
  const made = await summarize(ctx, call, { items, token: principal.token.id, guard });
  if (made instanceof Response) return made;
  if (plan.kind === "trigger") return await triggerAnswer(call, made);
  if (plan.kind === "compact") return compactAnswer(items, made);
  const before = made.usage;
  const { exchange } = call;
  const addBefore = () => exchange.usage = addUsage(before, exchange.usage);
  const res = await relay(deps, {
    ...call,
    body: { ...call.body, input: [summaryMessage(made.text)] },
    bytes: undefined,
    leading: [made.item],
    leadingUsage: before,
    deferFinish() {
      const done = call.deferFinish();
      return () => {
        addBefore();
        done();
      };
    },
  });
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) addBefore();
  return res;
}

/** The answer to a trigger: the summary's response with the item as its only output, whole or as its events. */
async function triggerAnswer(call: RelayRequest, made: Summary): Promise<Response> {
  const response: JsonObject = { ...made.answer, status: "completed", output: [made.item] };
  if (call.watch) await call.watch.body(response);
  if (call.body.stream !== true) return json(response);
  let sequence = 0;
  const event = (type: string, fields: JsonObject): SseMessage => ({
    event: type,
    data: JSON.stringify({ type, ...fields, sequence_number: sequence++ }),
  });
  const opening = { ...response, status: "in_progress", output: [], usage: null };
  const events = [
    event("response.created", { response: opening }),
    event("response.in_progress", { response: opening }),
    event("response.output_item.added", { output_index: 0, item: made.item }),
    event("response.output_item.done", { output_index: 0, item: made.item }),
    event("response.completed", { response }),
  ];
  return new Response(events.map(encodeSse).join(""), {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}

/**
 * POST /v1/responses/compact: the conversation's user messages, then one `compaction` item, as OpenAI's compact
 * endpoint answers; nothing is stored.
 */
function compactAnswer(items: readonly JsonObject[], made: Summary): Response {
  // The summary that stood for an earlier compaction is the gateway's message, not the user's.
  const users = items.filter((item) => item.type === "message" && item.role === "user" && !isSummaryMessage(item))
    .map((item) =>
      typeof item.content === "string" ? { ...item, content: [{ type: "input_text", text: item.content }] } : item
    );
  return json({
    id: made.answer.id,
    object: "response.compaction",
    created_at: made.answer.created_at,
    output: [...users, made.item],
    usage: made.answer.usage ?? null,
  });
}

function isSummaryMessage(item: JsonObject): boolean {
  return typeof item.content === "string" && item.content.startsWith(SUMMARY_HEADER);
}

function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!a || !b) return a ?? b;
  const out = { ...b };
  for (const key of Object.keys(out) as (keyof Usage)[]) {
    if (isObject(a) && typeof a[key] === "number") out[key] = (a[key] ?? 0) + (b[key] ?? 0);
  }
  return out;
}
