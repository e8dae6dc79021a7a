/**
 * @module The console under /ui: off (404, like any unknown path) without an admin key; sign-in (admin key, identity
 * provider) and sign-out; the session, Origin and role checks in front of every page; its route table; and the
 * security headers on every answer.
 */
import type { Actor } from "../admin/audit.ts";
import { serviceOf, whereFrom } from "../admin/routes.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { asset } from "./assets.ts";
import { AUDIT_ROUTES } from "./audit.ts";
import { BATCH_ROUTES } from "./batches.ts";
import type { ConsoleRoute } from "./context.ts";
import { GROUP_ROUTES } from "./groups.ts";
import { html } from "./html.ts";
import { OPERATOR_ROUTES } from "./operators.ts";
import { OVERVIEW_ROUTES } from "./overview.ts";
import { PEOPLE_ROUTES } from "./people.ts";
import { pageResponse, redirect, secure, withSignedIn } from "./page.ts";
import { MEMBER_NAV, MY_TOKENS } from "./member_nav.ts";
import { MEMBER_TOKEN_ROUTES } from "./member_tokens.ts";
import { MCP_ROUTES } from "./mcp.ts";
import { OAUTH_GRANT_ROUTES } from "./oauth_grants.ts";
import { MEMBER_USAGE_ROUTES } from "./member_usage.ts";
import { REQUEST_ROUTES } from "./requests.ts";
import { finishOidc, startOidc } from "./oidc_signin.ts";
import { endSession, readSession, sameOrigin, type Session, sessionCookie } from "./session.ts";
import { nextPage, sessionLimits, signIn, signInPage } from "./signin.ts";
import { TOKEN_DETAIL_ROUTES } from "./token_detail.ts";
import { TOKEN_ROUTES } from "./tokens.ts";
import { UPSTREAM_ROUTES } from "./upstreams.ts";
import { USAGE_ROUTES } from "./usage.ts";

/** Every page behind the sign-in, by method and path under /ui. */
export const CONSOLE_ROUTES: readonly ConsoleRoute[] = [
  ...OVERVIEW_ROUTES,
  ...TOKEN_ROUTES,
  ...TOKEN_DETAIL_ROUTES,
  ...GROUP_ROUTES,
  ...USAGE_ROUTES,
  ...BATCH_ROUTES,
  ...REQUEST_ROUTES,
  ...UPSTREAM_ROUTES,
  ...MCP_ROUTES,
  ...OAUTH_GRANT_ROUTES,
  ...OPERATOR_ROUTES,
  ...PEOPLE_ROUTES,
  ...AUDIT_ROUTES,
  ...MEMBER_TOKEN_ROUTES,
  ...MEMBER_USAGE_ROUTES,
];

/** The route for a method and path, with its parameters decoded; a malformed %-escape matches nothing. */
export function matchRoute(
  routes: readonly ConsoleRoute[],
  method: string,
  path: string,
): { route?: ConsoleRoute; params: Record<string, string>; pathKnown: boolean } {
  const parts = path.split("/");
  let pathKnown = false;
  for (const route of routes) {
    const pattern = route.path.split("/");
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    const matches = pattern.every((segment, i) => {
      if (!segment.startsWith(":")) return segment === parts[i];
      try {
        params[segment.slice(1)] = decodeURIComponent(parts[i]);
        return parts[i] !== "";
      } catch {
        return false;
      }
    });
    if (!matches) continue;
    pathKnown = true;
    if (route.method === method) return { route, params, pathKnown };
  }
  return { params: {}, pathKnown };
}

function refusedOrigin(): Response {
  const body = html`<p>This form did not come from the console's own page, so nothing was changed.
<a href="/ui/">Open the console</a> and try again.</p>`;
  return pageResponse({ title: "Refused", body }, 403);
}

/** An error a page did not handle itself, as a page: the message for refusals, a generic line otherwise. */
function errorPage(err: unknown, ctx: RequestContext, actor?: Actor): Response {
  const error = err instanceof GatewayError ? err : undefined;
  if (!error || error.status >= 500) {
    ctx.deps.log({ request_id: ctx.requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
  }
  const text = error && error.status < 500 ? error.message : `Something went wrong (request ${ctx.requestId}).`;
  // A member is shown only their own pages, here as everywhere.
  const member = actor?.role === "member";
  const body = member
    ? html`<p><a href="${MY_TOKENS}">Back to my tokens</a></p>`
    : html`<p><a href="/ui/">Back to the overview</a></p>`;
  // The error's own headers go too: a 408's `connection: close`, a busy store's `retry-after`.
  return pageResponse(
    { title: "Not done", nav: "", links: member ? MEMBER_NAV : undefined, body, notice: { text, tone: "bad" } },
    error?.status ?? 500,
    error?.headers,
  );
}

async function route(req: Request, ctx: RequestContext, adminKey: string): Promise<Response> {
  const url = new URL(req.url);
  const path = ctx.params.rest || "/";
  // A HEAD is answered as its GET; the server sends no body.
  const method = req.method === "HEAD" ? "GET" : req.method;
  const { kv } = ctx.deps.store;
  if (method === "GET" && path.startsWith("/assets/")) {
    return asset(path.slice("/assets/".length)) ?? pageResponse({ title: "Not found", body: html`` }, 404);
  }
  // Every change, signing in and out included, must come from the console's own pages.
  if (req.method === "POST" && !sameOrigin(req, ctx.peer)) {
    await req.body?.cancel();
    return refusedOrigin();
  }
  if (path === "/login" && req.method === "POST") return await signIn(req, ctx, adminKey);
  const oidc = ctx.deps.operator.oidc;
  if (method === "GET" && path === "/auth/oidc" && oidc) {
    return await startOidc(ctx, oidc, adminKey, nextPage(url.searchParams.get("next")));
  }
  if (method === "GET" && path === "/auth/callback" && oidc) {
    return await finishOidc(req, ctx, oidc, adminKey, sessionLimits(ctx));
  }
  if (path === "/logout" && req.method === "POST") {
    await req.body?.cancel();
    const { https } = ctx.peer;
    await ctx.deps.store.writes.write("console_session", () => endSession(kv, adminKey, req, https));
    return redirect("/ui/?done=signed-out", { "set-cookie": sessionCookie(undefined, https) });
  }
  const { https } = ctx.peer;
  const session = await readSession(kv, adminKey, req, { ...sessionLimits(ctx), now: ctx.deps.now(), https });
  if (!session) {
    await req.body?.cancel();
    if (method !== "GET") return signInPage(ctx, 401, "/ui/");
    // After signing in, back to the page that was asked for.
    const next = path === "/" || path.startsWith("/log") ? "/ui/" : `/ui${path}${url.search}`;
    const done = url.searchParams.get("done") === "signed-out";
    return signInPage(ctx, 200, next, done ? { text: "Signed out.", tone: "ok" } : undefined);
  }
  const actor = consoleActor(req, ctx, session);
  const { route, params, pathKnown } = matchRoute(CONSOLE_ROUTES, method, path);
  if (!route) {
    await req.body?.cancel();
    const text = pathKnown ? `Method ${req.method} is not allowed here` : `No console page at ${url.pathname}`;
    return errorPage(new GatewayError("not_found", text, { status: pathKnown ? 405 : 404 }), ctx, actor);
  }
  // A member's home is their own tokens.
  if (actor.role === "member" && path === "/") return redirect(`${MY_TOKENS}${url.search}`);
  const forbidden = roleRefusal(actor, route);
  if (forbidden) {
    await req.body?.cancel();
    return errorPage(forbidden, ctx, actor);
  }
  const page = await route.handle({
    req,
    url,
    deps: ctx.deps,
    service: serviceOf(ctx.deps, actor),
    actor,
    params,
    now: ctx.deps.now(),
  });
  return await withSignedIn(page, actor);
}

/** Why the actor's role may not use the route, or undefined: a member only member pages, a viewer no change. */
function roleRefusal(actor: Actor, route: ConsoleRoute): GatewayError | undefined {
  if (actor.role === "member" && !route.member) {
    return new GatewayError(
      "permission",
      `The role "member" of "${actor.name}" may open only their own tokens and usage`,
    );
  }
  if (actor.role === "viewer" && route.method !== "GET") {
    return new GatewayError("permission", `The role "viewer" of "${actor.name}" may read but not change anything`);
  }
  return undefined;
}

/**
 * Who a console session acts as, from the browser's address: the admin key's session as the admin key (owner), a
 * person's as their email with the role and token groups they have now.
 */
function consoleActor(req: Request, ctx: RequestContext, session: Session): Actor {
  const from = whereFrom(req, ctx, "console");
  const person = session.person;
  if (!person) return { name: "admin key", role: "owner", ...from };
  return { name: person.email, role: person.role, email: person.email, token_groups: person.token_groups, ...from };
}

/** Serves a request under /ui, any method: the console's half of its endpoint (./endpoint.ts loads it on first use). */
export async function consolePages(req: Request, ctx: RequestContext): Promise<Response> {
  const adminKey = ctx.deps.operator.adminKey;
  if (!adminKey) {
    // Off looks exactly like a path that does not exist.
    throw new GatewayError("not_found", `Unknown path: ${req.method} ${new URL(req.url).pathname}`, {
      code: "unknown_url",
    });
  }
  try {
    return secure(await route(req, ctx, adminKey));
  } catch (err) {
    if (req.body && !req.bodyUsed) await req.body.cancel().catch(() => {});
    return secure(errorPage(err, ctx));
  }
}
