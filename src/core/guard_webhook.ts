/**
 * @module A policy webhook asked about a request's texts: POST `{rule, scope, model, protocol, token, texts}`, answer
 * `{action: "allow" | "block", reason?}`; a timeout, a failed call or an answer of another shape counts as the rule's
 * `on_error`. Header values come from the environment variables the config names; nothing else is sent.
 */
import type { WebhookRule } from "./guard_book.ts";
import type { GuardScope } from "./text_scan.ts";

/** What the webhook is told of the caller: never the token's secret. */
export interface WebhookCaller {
  id: string;
  name: string;
  group: string;
  owner?: string;
}

/** What a webhook decided. */
export interface WebhookVerdict {
  action: "allow" | "block";
  reason?: string;
  /** Set when the webhook did not answer as it should, and `on_error` decided. */
  failed?: string;
}

/** The most characters of a reason passed on to the client. */
const REASON_MAX = 500;

/** Asks `rule`'s webhook; never throws. */
export async function askWebhook(
  rule: WebhookRule,
  question: { scope: GuardScope; model: string; protocol: string; token: WebhookCaller; texts: readonly string[] },
  deps: { fetch: typeof fetch; env(name: string): string | undefined },
): Promise<WebhookVerdict> {
  const { webhook } = rule;
  const headers = new Headers({ "content-type": "application/json" });
  for (const [name, env] of Object.entries(webhook.headers ?? {})) {
    const value = deps.env(env);
    if (value !== undefined) headers.set(name, value);
  }
  const failed = (why: string): WebhookVerdict => ({ action: webhook.on_error, failed: why });
  try {
    const res = await deps.fetch(webhook.url, {
      method: "POST",
      headers,
      body: JSON.stringify({ rule: rule.name, ...question }),
      signal: AbortSignal.timeout(webhook.timeout_ms),
      redirect: "manual",
    });
    if (!res.ok) {
      await res.body?.cancel();
      return failed(`status ${res.status}`);
    }
    const answer = await res.json();
    if (answer?.action !== "allow" && answer?.action !== "block") return failed("an answer without action");
    const reason = typeof answer.reason === "string" ? answer.reason.slice(0, REASON_MAX) : undefined;
    return { action: answer.action, reason };
  } catch (err) {
    return failed((err as Error).name === "TimeoutError" ? "timeout" : "unreachable");
  }
}
