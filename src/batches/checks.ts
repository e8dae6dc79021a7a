/**
 * @module The checks every batch passes before anything is made upstream, whichever its protocol: not empty, within
 * `batches.max_requests`, each custom_id well formed and unique, each model one the caller's group enables; and the
 * choice of its path: one native deployment serving every model it names, or the batches the gateway runs.
 */
import type { BatchProtocol, CheckedRequest, GatewayBatchRunner } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import type { Principal } from "../core/principal.ts";
import { shownId } from "../core/validation.ts";
import type { RouteTable } from "../relay/routing.ts";
import { type Native, nativeFor } from "./upstreams.ts";

/** Anthropic's documented custom_id: 1 to 64 letters, digits, '_' or '-'. */
const CUSTOM_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** A 400 naming the field at fault, as OpenAI's `param` too. */
export function badField(field: string, message: string): GatewayError {
  return new GatewayError("invalid_request", `${field}: ${message}`, { param: field });
}

/** Where each request's fields sit in the client's input: `requests[3]` inline, or `line 4` of a file. */
export interface Place {
  /** The name of request `index` (0-based) in messages: "requests[3]", "line 4". */
  at(index: number): string;
  /** The field of the model within a request: "params.model", "body.model". */
  model: string;
}

/** Refuses an empty batch and one past `max_requests`, in the protocol's statuses (400 and 413). */
export function checkCount(count: number, maxRequests: number, what: string): void {
  if (count === 0) throw badField(what, "must hold at least one request");
  if (count > maxRequests) {
    throw new GatewayError(
      "request_too_large",
      `${what}: ${count} requests are more than this gateway's bound of ${maxRequests} (batches.max_requests)`,
      { param: what },
    );
  }
}

/** Checks each request's custom_id and model; answers the distinct models in first-seen order. */
export function checkRequests(requests: readonly CheckedRequest[], principal: Principal, place: Place): string[] {
  const ids = new Set<string>();
  const models: string[] = [];
  requests.forEach((request, index) => {
    const id = request.custom_id;
    if (!CUSTOM_ID.test(id)) {
      throw badField(`${place.at(index)}.custom_id`, "must be 1 to 64 letters, digits, '_' or '-'");
    }
    if (ids.has(id)) throw badField(`${place.at(index)}.custom_id`, `${JSON.stringify(id)} is used twice`);
    ids.add(id);
    const model = request.body.model;
    const field = `${place.at(index)}.${place.model}`;
    if (typeof model !== "string" || model === "") throw badField(field, "must name a model");
    if (!principal.group.models.includes(model)) {
      throw badField(field, `${JSON.stringify(shownId(model))} is not available to this API key`);
    }
    if (!models.includes(model)) models.push(model);
  });
  return models;
}

/** The path a batch takes: one native deployment, or the gateway's own runner. */
export type BatchPath = { native: Native; runner?: undefined } | { native?: undefined; runner: GatewayBatchRunner };

/**
 * The native deployment serving every model of the batch, else the gateway's runner; without the runner, a 400 that
 * names the first request whose model has no native batch path here.
 */
export function choosePath(
  table: RouteTable,
  protocol: BatchProtocol,
  requests: readonly CheckedRequest[],
  models: readonly string[],
  runner: GatewayBatchRunner | undefined,
  place: Place,
): BatchPath {
  const native = nativeFor(table, protocol, models);
  if (native) return { native };
  if (runner) return { runner };
  const alone = models.find((model) => !nativeFor(table, protocol, [model])) ?? models[models.length - 1];
  const index = requests.findIndex((request) => request.body.model === alone);
  const api = protocol === "anthropic" ? "Anthropic's Message Batches API" : "OpenAI's Batch API";
  const reason = nativeFor(table, protocol, [alone])
    ? `no one upstream with ${api} serves every model of this batch`
    : `it is on no upstream with ${api}`;
  throw badField(
    `${place.at(index)}.${place.model}`,
    `${JSON.stringify(alone)} cannot be batched here: ${reason}`,
  );
}
