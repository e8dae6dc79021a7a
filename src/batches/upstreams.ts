/**
 * @module Which deployment a batch or a file goes to natively: an upstream whose provider has the Files and batch
 * APIs (Anthropic, OpenAI, Azure OpenAI's v1 API) and that serves every model named; and the calls forwarded to it,
 * their failures told to the client without the provider's address.
 */
import type { BatchProtocol } from "../core/batch_contract.ts";
import type { UpstreamConfig } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Price } from "../core/money.ts";
import type { Group } from "../core/principal.ts";
import type { ForwardCall, Transport } from "../providers/transport.ts";
import type { RouteTable } from "../relay/routing.ts";

/** An upstream reachable through its provider's Files and batch APIs. */
export interface Native {
  upstream: UpstreamConfig;
  forward(call: ForwardCall): Promise<Response>;
  /** Public model id -> the id this upstream knows it by. */
  upstreamModels: Map<string, string>;
  /** Public model id -> what it costs on this upstream, when the config prices it. */
  prices: Map<string, Price | undefined>;
}

/** The batch API an upstream kind has, if any. */
export function batchApiOf(upstream: UpstreamConfig): BatchProtocol | undefined {
  switch (upstream.protocol) {
    case "anthropic":
      return "anthropic";
    case "openai-responses":
    case "azure-openai":
      return "openai";
    case "openai":
      return upstream.batch_api ?? new URL(upstream.base_url).hostname === "api.openai.com" ? "openai" : undefined;
    default:
      return undefined;
  }
}

/**
 * The provider account an upstream reaches: its API, base URL and credential. Two upstreams of one account (one for
 * chat, one for Responses, say) hold the same files, so a file uploaded through one may be named through the other.
 */
export function accountOf(upstream: UpstreamConfig): string {
  const credential = "api_key_env" in upstream && upstream.api_key_env
    ? upstream.api_key_env
    : "entra" in upstream && upstream.entra
    ? `${upstream.entra.tenant_id}/${upstream.entra.client_id}`
    : "";
  return JSON.stringify([batchApiOf(upstream) ?? upstream.protocol, upstream.base_url, credential]);
}

/** Every upstream with a transport that forwards, by name, with the models it serves. */
function natives(table: RouteTable, protocol: BatchProtocol): Native[] {
  const found = new Map<string, Native>();
  for (const routes of table.routes.values()) {
    for (const route of routes) {
      const forward = route.transport?.forward?.bind(route.transport) as Transport["forward"];
      if (!forward || batchApiOf(route.upstream) !== protocol) continue;
      const native = found.get(route.upstream.name) ??
        { upstream: route.upstream, forward, upstreamModels: new Map<string, string>(), prices: new Map() };
      native.upstreamModels.set(route.model, route.upstreamModel);
      native.prices.set(route.model, route.price);
      found.set(route.upstream.name, native);
    }
  }
  // Config order, so the first upstream listed wins among equals.
  return [...found.values()].sort((a, b) => order(table, a) - order(table, b));
}

function order(table: RouteTable, native: Native): number {
  let at = 0;
  for (const routes of table.routes.values()) {
    for (const route of routes) {
      if (route.upstream === native.upstream) return at;
      at++;
    }
  }
  return at;
}

/**
 * The first native upstream that serves every one of `models` (of the account of `within`, when given: where the
 * batch's input file is); undefined when none does.
 */
export function nativeFor(
  table: RouteTable,
  protocol: BatchProtocol,
  models: readonly string[],
  within?: UpstreamConfig,
): Native | undefined {
  const account = within && accountOf(within);
  return natives(table, protocol).find((native) =>
    (account === undefined || accountOf(native.upstream) === account) &&
    models.every((model) => native.upstreamModels.has(model))
  );
}

/** The native upstream named `name`, as an id record names it; undefined once it is gone from the config. */
export function nativeNamed(table: RouteTable, protocol: BatchProtocol, name: string): Native | undefined {
  return natives(table, protocol).find((native) => native.upstream.name === name);
}

/** Where a file is put when the caller names no model: the first native upstream serving a model the group enables. */
export function nativeForGroup(table: RouteTable, protocol: BatchProtocol, group: Group): Native {
  const native = natives(table, protocol).find((each) => group.models.some((model) => each.upstreamModels.has(model)));
  if (!native) {
    const api = protocol === "anthropic" ? "Anthropic's" : "OpenAI's";
    throw new GatewayError(
      "invalid_request",
      `None of the models of this API key is on an upstream with ${api} Files API`,
    );
  }
  return native;
}

/** Forwards a call, a network failure told as the upstream's, in words that name neither the address nor a key. */
export async function send(native: Native, call: ForwardCall): Promise<Response> {
  try {
    return await native.forward(call);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    if (call.signal.aborted) throw err;
    throw new GatewayError("upstream", `Upstream "${native.upstream.name}" could not be reached`, { cause: err });
  }
}

/**
 * An answer that is not a success, as the client gets it: the provider's JSON error (its status and body, as the
 * provider's own client would see them), or a 502 when the body is not JSON.
 */
export async function passError(res: Response, native: Native): Promise<Response> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text);
    return Response.json(body, { status: res.status });
  } catch {
    throw new GatewayError("upstream", `Upstream "${native.upstream.name}" answered ${res.status}`);
  }
}
