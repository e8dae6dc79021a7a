/**
 * @module What a native batch's requests pass before its provider gets them, whatever the protocol: every file they
 * name is the caller's and on the deployment, and their bodies pass the group's input guardrails (a gateway-run
 * batch's requests pass them as each is served).
 */
import type { CheckedRequest } from "../core/batch_contract.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject, Protocol } from "../core/types.ts";
import type { RequestContext } from "../handlers/context.ts";
import { guardBodies } from "../handlers/guard.ts";
import { fileIdsOf, sameDeployment } from "./file_refs.ts";
import { idStore } from "./ids.ts";
import type { Native } from "./upstreams.ts";

/** The requests' bodies as the provider may get them (masked where a rule masks); `at` names a request's body. */
export async function nativeBodies(
  ctx: RequestContext,
  call: {
    principal: Principal;
    native: Native;
    protocol: Protocol;
    requests: readonly CheckedRequest[];
    at(index: number): string;
  },
): Promise<readonly JsonObject[]> {
  const { principal, native, requests, at } = call;
  const files = idStore(ctx.deps.store.kv);
  for (const [index, request] of requests.entries()) {
    await sameDeployment(fileIdsOf(request.body), at(index), native, principal, files, ctx.deps.config.upstreams);
  }
  return await guardBodies(ctx.deps.guardrails, {
    principal,
    exchange: ctx.exchange,
    protocol: call.protocol,
    bodies: requests.map((request) => request.body),
    at,
  });
}
