/**
 * @module The admin API's endpoints under /admin: the admin key check (constant time, wrong keys slowed per
 * address; the API answers 404 when no key is configured) and thin handlers that hand JSON to the shared admin
 * service. Errors use OpenAI's shape.
 */
import { noCredential, readCredential, sameSecret } from "../access/auth.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { readJsonObject } from "../core/request_body.ts";
import type { Deps, Endpoint, RequestContext } from "../handlers/context.ts";
import { serves } from "../relay/routing.ts";
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
  if (!await sameSecret(given, key)) {
    attempt.failed();
    throw new GatewayError("authentication", "Invalid admin key");
  }
  return serviceOf(deps);
}

/** The admin service over the app's store and config, as the admin API and the console use it. */
export function serviceOf(deps: Deps): AdminService {
  return adminService({
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
];
