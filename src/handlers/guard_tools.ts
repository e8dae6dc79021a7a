/**
 * @module An MCP tool call through its group's guardrails (scope `tools`): its arguments masked, refused or counted
 * before the server gets them, the webhooks asked about them, and the tool's result masked or refused before the
 * client gets it. Placeholders are never restored in a tool's result: only a model's answers get originals back.
 */
import { GatewayError } from "../core/errors.ts";
import type { Guardrails } from "../core/guard_book.ts";
import { guardValue } from "../core/guard_walk.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject } from "../core/types.ts";
import type { Exchange } from "../core/exchange.ts";
import type { CallPlan } from "../mcp/methods.ts";
import type { GuardRun } from "../core/text_scan.ts";
import type { GuardPolicy } from "../core/guard_book.ts";
import { askWebhooks, guardRun } from "./guard.ts";

/** A call's plan with its arguments guarded, and the guard of its result; the plan as it was for a group without tool rules. */
export async function guardToolCall(
  guardrails: Guardrails | undefined,
  call: { principal: Principal; exchange: Exchange; route: CallPlan },
): Promise<{ route: CallPlan; result?(result: JsonObject): JsonObject }> {
  const policy: GuardPolicy | undefined = guardrails?.book.policy(call.principal.group);
  const { route } = call;
  if (!guardrails || !policy || (policy.scan.tools.length === 0 && policy.webhooks.tools.length === 0)) {
    return { route };
  }
  const run: GuardRun = guardRun(guardrails, call.exchange);
  const rules = policy.scan.tools;
  const params = (route.request.params ?? {}) as JsonObject;
  const texts: string[] = [];
  const asking = policy.webhooks.tools.length > 0;
  const args = guardValue(params.arguments, rules, run, { scope: "tools", texts: asking ? texts : undefined });
  if (asking) {
    await askWebhooks(guardrails, policy, {
      scope: "tools",
      run,
      principal: call.principal,
      model: "",
      protocol: "mcp",
      texts,
    });
  }
  const guarded = args === params.arguments ? route : {
    ...route,
    request: { ...route.request, params: { ...params, arguments: args } },
  };
  return {
    route: guarded,
    // Scope `tools` never restores: a tool's result gets no originals back (see text_scan.ts, scanRules).
    result: (result) => guardValue(result, rules, run, { scope: "tools" }),
  };
}

/** True for the refusal of a guardrail. */
export function isGuardRefusal(err: unknown): err is GatewayError {
  return err instanceof GatewayError && err.code === "guardrail_blocked";
}
