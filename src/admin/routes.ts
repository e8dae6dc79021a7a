/**
 * @module The admin API's endpoints under /admin: the admin key check (constant time; the API answers 404 when
 * no key is configured) or an operator key's, wrong keys slowed per address, the actor each call acts as, and thin
 * handlers that hand JSON to the shared admin service. Errors use OpenAI's shape.
 */
import { noCredential, readCredential, sameSecret } from "../access/auth.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { readJsonObject } from "../core/request_body.ts";
import type { Deps, Endpoint, RequestContext } from "../handlers/context.ts";
import { serves } from "../relay/routing.ts";
import { type BatchDesk, cancelBatch, listBatches } from "../batches/operate.ts";
import type { Actor } from "./audit.ts";
import { keyActor } from "./operator_ops.ts";
import { type AdminService, adminService } from "./service.ts";

async function authorize(req: Request, ctx: RequestContext): Promise<AdminService> {
  const { deps } = ctx;
  const key = deps.operator.adminKey;
  if (!key) {
    // Off looks exactly like a path that does not exist.
    throw new GatewayError("not_found", `Unknown path: ${req.method} ${new URL(req.url).pathname}`, {
      code: "unknown_url",
    });
  }
  const given = readCredential(req.headers);
  if (!given) throw noCredential(req.headers, "admin key");
  const attempt = deps.operator.guard.attempt("admin_key", ctx.peer.address);
  const from = whereFrom(req, ctx, "api");
  if (await sameSecret(given, key)) return serviceOf(deps, { name: "admin key", role: "owner", ...from });
  // A revoked or expired operator key is a real one, not a guess (as with client tokens), so only a secret that is
  // neither the admin key nor any operator key is charged to the address.
  const actor = await keyActor(deps.store, given, deps.now(), from);
  if (!actor) {
    attempt.failed();
    throw new GatewayError("authentication", "Invalid admin key");
  }
  return serviceOf(deps, actor);
}

/** Where a call to the admin API or the console comes from, as the audit trail records it. */
export function whereFrom(
  req: Request,
  ctx: RequestContext,
  via: Actor["via"],
): Pick<Actor, "via" | "ip" | "user_agent"> {
  return { via, ip: ctx.peer.address, user_agent: req.headers.get("user-agent") ?? undefined };
}

/** The admin service over the app's store and config acting as `actor`, as the admin API and the console use it. */
export function serviceOf(deps: Deps, actor: Actor): AdminService {
  return adminService({
    actor,
    store: deps.store,
    config: deps.config,
    served: (model) => serves(deps.table, model),
    now: deps.now,
    usageDays: deps.operator.usageDays,
  });
}

type Action = (service: AdminService, req: Request, ctx: RequestContext) => Promise<unknown>;

const bodyOf = (req: Request, ctx: RequestContext) =>
  readJsonObject(req, { maxBytes: ctx.deps.config.max_body_bytes, idleMs: ctx.deps.config.body_idle_timeout_ms });
const queryOf = (req: Request) => Object.fromEntries(new URL(req.url).searchParams);

function admin(method: Endpoint["method"], path: string, action: Action, status = 200): Endpoint {
  return {
    method,
    path,
    operator: true,
    errors: () => "openai-chat",
    async handle(req, ctx) {
      const service = await authorize(req, ctx);
      // A role that may only read is refused before a body is read, whatever the body holds.
      if (method !== "GET") service.mayChange();
      return json(await action(service, req, ctx), { status });
    },
  };
}

/** The admin endpoints, for the app's endpoint table. */
export const ADMIN_ENDPOINTS: readonly Endpoint[] = [
  admin("GET", "/admin/tokens", async (s, req) => ({ data: await s.listTokens(queryOf(req).group) })),
  admin("POST", "/admin/tokens", async (s, req, ctx) => s.createToken(await bodyOf(req, ctx)), 201),
  admin("GET", "/admin/tokens/:id", (s, _req, ctx) => s.getToken(ctx.params.id)),
  admin("PATCH", "/admin/tokens/:id", async (s, req, ctx) => s.updateToken(ctx.params.id, await bodyOf(req, ctx))),
  admin("DELETE", "/admin/tokens/:id", (s, _req, ctx) => s.revokeToken(ctx.params.id)),
  admin("GET", "/admin/groups", async (s) => ({ data: await s.listGroups() })),
  admin("POST", "/admin/groups", async (s, req, ctx) => s.createGroup(await bodyOf(req, ctx)), 201),
  admin("GET", "/admin/groups/:id", (s, _req, ctx) => s.getGroup(ctx.params.id)),
  admin("PATCH", "/admin/groups/:id", async (s, req, ctx) => s.updateGroup(ctx.params.id, await bodyOf(req, ctx))),
  admin("DELETE", "/admin/groups/:id", (s, _req, ctx) => s.deleteGroup(ctx.params.id)),
  admin("DELETE", "/admin/tokens/:id/responses", (s, _req, ctx) => s.purgeResponses(ctx.params.id)),
  admin("DELETE", "/admin/responses/:id", (s, _req, ctx) => s.deleteResponse(ctx.params.id)),
  admin("GET", "/admin/usage", (s, req) => s.usage(queryOf(req))),
  admin("GET", "/admin/requests", (s, req) => s.requests(queryOf(req))),
  admin("GET", "/admin/audit", (s, req) => s.audit(queryOf(req))),
  admin("GET", "/admin/operator-keys", async (s) => ({ data: await s.listOperatorKeys() })),
  admin("POST", "/admin/operator-keys", async (s, req, ctx) => s.createOperatorKey(await bodyOf(req, ctx)), 201),
  admin("DELETE", "/admin/operator-keys/:id", (s, _req, ctx) => s.revokeOperatorKey(ctx.params.id)),
  admin("GET", "/admin/people", async (s) => ({ data: await s.listPeople() })),
  admin("GET", "/admin/people/:id", (s, _req, ctx) => s.getPerson(ctx.params.id)),
  admin("PUT", "/admin/people/:id", async (s, req, ctx) => s.setPersonRole(ctx.params.id, await bodyOf(req, ctx))),
  admin("DELETE", "/admin/people/:id", (s, _req, ctx) => s.removePerson(ctx.params.id)),
  admin("GET", "/admin/mcp/grants", async (s) => ({ data: await s.listOAuthGrants() })),
  admin("DELETE", "/admin/mcp/grants/:id", (s, _req, ctx) => s.revokeOAuthGrant(ctx.params.id)),
  admin("GET", "/admin/mcp/clients", async (s) => ({ data: await s.listOAuthClients() })),
  admin("GET", "/admin/batches", async (_s, req, ctx) => ({ data: await listBatches(deskOf(ctx.deps), limitOf(req)) })),
  admin(
    "POST",
    "/admin/batches/:id/cancel",
    (s, _req, ctx) => s.cancelBatch(ctx.params.id, () => cancelBatch(deskOf(ctx.deps), ctx.params.id)),
  ),
];

/** What the operator's batch calls work on. */
export function deskOf(deps: Deps): BatchDesk {
  return { kv: deps.store.kv, table: deps.table, now: deps.now, runner: deps.batchRunner };
}

/** The `limit` of a batch listing: 1 to 1000, 100 by default. */
function limitOf(req: Request): number {
  const raw = new URL(req.url).searchParams.get("limit");
  if (raw === null) return 100;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > 1000) {
    throw new GatewayError("invalid_request", "limit: must be an integer from 1 to 1000", { param: "limit" });
  }
  return limit;
}
