/**
 * @module A batch's budget check at create time: the largest cost it may reach (each request's estimated prompt at
 * the input rate and its output cap at the output rate, at the price its path charges) must fit the token's and the
 * group's cost budgets, or the batch is refused whole before anything is made.
 */
import { estimateRequest } from "../access/limits.ts";
import type { CheckedRequest } from "../core/batch_contract.ts";
import type { Price } from "../core/money.ts";
import type { Principal } from "../core/principal.ts";
import type { RequestContext } from "../handlers/context.ts";
import { estimateCost, highestPrices } from "../usage/cost.ts";
import { batchPrice } from "./settle.ts";
import type { Native } from "./upstreams.ts";

/** The price each model of a batch is charged at: its native deployment's batch price, else its highest price. */
export function priceFor(ctx: RequestContext, native: Native | undefined): (model: string) => Price | undefined {
  if (native) return (model) => batchPrice(native.prices.get(model));
  const highest = highestPrices(ctx.deps.config);
  return (model) => highest.get(model);
}

/** Refuses the batch when its largest possible cost does not fit the caller's budgets. */
export async function checkBudget(
  ctx: RequestContext,
  principal: Principal,
  requests: readonly CheckedRequest[],
  price: (model: string) => Price | undefined,
): Promise<void> {
  let cost = 0n;
  for (const request of requests) {
    cost += estimateCost(estimateRequest(request.body), price(request.body.model as string));
  }
  await ctx.deps.operator.limiter.checkCost(ctx.exchange, principal, cost);
}
