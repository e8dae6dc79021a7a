/**
 * @module A generate request through its group's guardrails: the body's texts masked, refused or counted before
 * anything else reads it (the upstream, the stored turns, a compaction), the webhooks asked, and the answer (whole or
 * streamed) masked and its placeholders restored on its way to the client.
 */
import type { GatewayError } from "../core/errors.ts";
import { type GuardPolicy, type Guardrails, guardsAnswers } from "../core/guard_book.ts";
import { guardValue } from "../core/guard_walk.ts";
import { askWebhook } from "../core/guard_webhook.ts";
import type { Principal } from "../core/principal.ts";
import { countHit, guardBlocked, type GuardRun, type GuardScope } from "../core/text_scan.ts";
import type { Exchange } from "../core/exchange.ts";
import type { JsonObject, Protocol } from "../core/types.ts";
import { errorResponse } from "../protocols/client_errors.ts";
import { guardStream } from "../relay/guard_stream.ts";

/** What a request's answer goes through; undefined when its rules leave answers alone. */
export interface AnswerGuard {
  policy: GuardPolicy;
  run: GuardRun;
}

/** A fresh run for one request, whose hits land in the request's record. */
export function guardRun(guardrails: Guardrails, exchange: Exchange): GuardRun {
  const run: GuardRun = { hits: [], restores: new Map(), tag: guardrails.tag };
  exchange.guardrails = run.hits;
  return run;
}

/** Asks each webhook of `scope` about `texts`; throws the refusal of the first that blocks. */
export async function askWebhooks(
  guardrails: Guardrails,
  policy: GuardPolicy,
  call: { scope: GuardScope; run: GuardRun; principal: Principal; model: string; protocol: string; texts: string[] },
): Promise<void> {
  const { token } = call.principal;
  for (const rule of policy.webhooks[call.scope]) {
    const verdict = await askWebhook(rule, {
      scope: call.scope,
      model: call.model,
      protocol: call.protocol,
      token: { id: token.id, name: token.name, group: token.group, owner: token.owner },
      texts: call.texts,
    }, guardrails);
    const kind = verdict.failed ? "webhook_error" : "webhook";
    countHit(call.run, { rule: rule.name, kind, action: verdict.action, scope: call.scope });
    if (verdict.action === "allow") continue;
    const reason = verdict.failed
      ? `could not be checked (${verdict.failed}), and the rule refuses what it cannot check`
      : `is refused${verdict.reason ? `: ${verdict.reason}` : ""}`;
    throw guardBlocked(rule.name, call.scope, reason);
  }
}

/**
 * The body with the group's input rules applied and its webhooks asked (throws the refusal of a blocking rule), and
 * the guard its answer goes through; the body itself and nothing more for a group without rules.
 */
export async function guardRequest(
  guardrails: Guardrails | undefined,
  call: { principal: Principal; exchange: Exchange; protocol: Protocol; body: JsonObject },
): Promise<{ body: JsonObject; answer?: AnswerGuard }> {
  const policy = guardrails?.book.get(call.principal.group.name);
  if (!guardrails || !policy) return { body: call.body };
  const run = guardRun(guardrails, call.exchange);
  const asking = policy.webhooks.input.length > 0;
  const texts: string[] = [];
  const body = guardValue(call.body, policy.scan.input, run, { scope: "input", texts: asking ? texts : undefined });
  if (asking) {
    const model = typeof body.model === "string" ? body.model : "";
    await askWebhooks(guardrails, policy, { ...call, scope: "input", run, model, texts });
  }
  return { body, answer: guardsAnswers(policy) ? { policy, run } : undefined };
}

/** The answer with the output rules applied and this request's placeholders restored; the same answer when none apply. */
export async function guardAnswer(
  res: Response,
  guard: AnswerGuard | undefined,
  context: { protocol: Protocol; requestId: string },
): Promise<Response> {
  if (!guard || !res.ok || !res.body) return res;
  const { policy, run } = guard;
  const rules = policy.scan.output;
  if (rules.length === 0 && run.restores.size === 0) return res;
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  if (res.headers.get("content-type")?.includes("text/event-stream")) {
    const body = guardStream(res.body, context.protocol, rules, run);
    return new Response(body, { status: res.status, headers });
  }
  const answer = await res.json();
  try {
    const guarded = guardValue(answer, rules, run, { scope: "output" });
    return new Response(JSON.stringify(guarded), { status: res.status, headers });
  } catch (err) {
    return errorResponse(err as GatewayError, context.protocol, context.requestId);
  }
}
