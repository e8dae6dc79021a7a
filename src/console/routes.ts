/**
 * @module The console under /ui: off (404, like any unknown path) without an admin key; sign-in and sign-out;
 * the session and Origin checks in front of every page; its route table; and the security headers on every answer.
 */
import { sameSecret } from "../access/auth.ts";
import { serviceOf, whereFrom } from "../admin/routes.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { asset } from "./assets.ts";
import { AUDIT_ROUTES } from "./audit.ts";
import type { ConsoleRoute } from "./context.ts";
import { readForm } from "./forms.ts";
import { GROUP_ROUTES } from "./groups.ts";
import { html } from "./html.ts";
import { OPERATOR_ROUTES } from "./operators.ts";
import { OVERVIEW_ROUTES } from "./overview.ts";
import { pageResponse, redirect, secure } from "./page.ts";
import { REQUEST_ROUTES } from "./requests.ts";
import { endSession, hasSession, sameOrigin, sessionCookie, type SessionLimits, startSession } from "./session.ts";
import { TOKEN_DETAIL_ROUTES } from "./token_detail.ts";
import { TOKEN_ROUTES } from "./tokens.ts";
import { UPSTREAM_ROUTES } from "./upstreams.ts";
import { USAGE_ROUTES } from "./usage.ts";

/** Every page behind the sign-in, by method and path under /ui. */
const ROUTES: readonly ConsoleRoute[] = [
  ...OVERVIEW_ROUTES,
  ...TOKEN_ROUTES,
  ...TOKEN_DETAIL_ROUTES,
  ...GROUP_ROUTES,
  ...USAGE_ROUTES,
  ...REQUEST_ROUTES,
  ...UPSTREAM_ROUTES,
  ...OPERATOR_ROUTES,
  ...AUDIT_ROUTES,
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

/** Stands in for the console's own origin while a `next` value is resolved as the browser would resolve it. */
const HERE = "http://console.invalid";

/**
 * Where to go after signing in: a console page the form named, else the overview. The value is resolved as a browser
 * resolves a Location (backslashes as slashes, dot segments and their %2e spellings removed), and only a path
 * under /ui/ of the same origin is kept, in its resolved form, so what is checked is where the browser goes.
 */
function nextPage(value: string | null): string {
  // A backslash, a space or a control character has no place in a console path; browsers drop or reinterpret them.
  const odd = [...value ?? ""].some((c) => c === "\\" || c <= " " || c === "\x7f");
  if (!value || !value.startsWith("/") || odd) return "/ui/";
  let url: URL;
  try {
    url = new URL(value, HERE);
  } catch {
    return "/ui/";
  }
  const path = `${url.pathname}${url.search}`;
  return url.origin === HERE && url.pathname.startsWith("/ui/") && !path.startsWith("//") ? path : "/ui/";
}

/** The sign-in form; the key is never put back in it. */
function signInPage(
  status: number,
  next: string,
  notice?: { text: string; tone: "ok" | "bad" },
  headers?: HeadersInit,
): Response {
  const body = html`
    <form method="post" action="/ui/login" class="panel signin">
      <label>Admin key <input type="password" name="key" autocomplete="current-password" required autofocus></label>
      <input type="hidden" name="next" value="${next}">
      <button type="submit" class="primary">Sign in</button>
      <p class="muted">The key is <code>MODELGATE_ADMIN_KEY</code> from the gateway's environment.</p>
    </form>
  `;
  return pageResponse({ title: "Sign in", body, notice }, status, headers);
}

async function signIn(req: Request, ctx: RequestContext, adminKey: string): Promise<Response> {
  const form = await readForm(req, ctx.deps.config.body_idle_timeout_ms);
  const next = nextPage(form.get("next"));
  let attempt;
  try {
    attempt = ctx.deps.operator.guard.attempt("admin_key", ctx.peer.address);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const refusal = err;
    return signInPage(refusal.status, next, { text: refusal.message, tone: "bad" }, refusal.headers);
  }
  if (!await sameSecret(form.get("key") ?? "", adminKey)) {
    attempt.failed();
    return signInPage(401, next, { text: "Wrong admin key.", tone: "bad" });
  }
  const { store } = ctx.deps;
  // Like every KV write, retried while another process holds the KV file.
  const now = ctx.deps.now();
  const options = { ...sessionLimits(ctx), now };
  const session = await store.writes.write("console_session", () => startSession(store.kv, adminKey, options));
  return redirect(next, { "set-cookie": sessionCookie({ ...session, now }, ctx.peer.https) });
}

/** The console's session lifetimes, from the config. */
function sessionLimits(ctx: RequestContext): SessionLimits {
  return { maxMs: ctx.deps.config.console.session_max_ms, idleMs: ctx.deps.config.console.session_idle_ms };
}

function refusedOrigin(): Response {
  const body = html`<p>This form did not come from the console's own page, so nothing was changed.
<a href="/ui/">Open the console</a> and try again.</p>`;
  return pageResponse({ title: "Refused", body }, 403);
}

/** An error a page did not handle itself, as a page: the message for refusals, a generic line otherwise. */
function errorPage(err: unknown, ctx: RequestContext): Response {
  const error = err instanceof GatewayError ? err : undefined;
  if (!error || error.status >= 500) {
    ctx.deps.log({ request_id: ctx.requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
  }
  const text = error && error.status < 500 ? error.message : `Something went wrong (request ${ctx.requestId}).`;
  const body = html`<p><a href="/ui/">Back to the overview</a></p>`;
  // The error's own headers go too: a 408's `connection: close`, a busy store's `retry-after`.
  return pageResponse(
    { title: "Not done", nav: "", body, notice: { text, tone: "bad" } },
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
  if (path === "/logout" && req.method === "POST") {
    await req.body?.cancel();
    const { https } = ctx.peer;
    await ctx.deps.store.writes.write("console_session", () => endSession(kv, adminKey, req, https));
    return redirect("/ui/?done=signed-out", { "set-cookie": sessionCookie(undefined, https) });
  }
  const { https } = ctx.peer;
  const signedIn = await hasSession(kv, adminKey, req, { ...sessionLimits(ctx), now: ctx.deps.now(), https });
  if (!signedIn) {
    await req.body?.cancel();
    if (method !== "GET") return signInPage(401, "/ui/");
    // After signing in, back to the page that was asked for.
    const next = path === "/" || path.startsWith("/log") ? "/ui/" : `/ui${path}${url.search}`;
    const done = url.searchParams.get("done") === "signed-out";
    return signInPage(200, next, done ? { text: "Signed out.", tone: "ok" } : undefined);
  }
  const { route, params, pathKnown } = matchRoute(ROUTES, method, path);
  if (!route) {
    await req.body?.cancel();
    const text = pathKnown ? `Method ${req.method} is not allowed here` : `No console page at ${url.pathname}`;
    return errorPage(new GatewayError("not_found", text, { status: pathKnown ? 405 : 404 }), ctx);
  }
  return await route.handle({
    req,
    url,
    deps: ctx.deps,
    service: serviceOf(ctx.deps, consoleActor(req, ctx)),
    params,
    now: ctx.deps.now(),
  });
}

/** Who a console session acts as: the admin key opened it, so it acts as the admin key, from the browser's address. */
function consoleActor(req: Request, ctx: RequestContext) {
  return { name: "admin key", role: "owner" as const, ...whereFrom(req, ctx, "console") };
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
