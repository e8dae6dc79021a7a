/**
 * @module The console's sign-in page (the admin key, and the identity provider when one is configured), the admin-key
 * sign-in itself (rate limited per address by the guard), and where the browser goes once signed in.
 */
import { sameSecret } from "../access/auth.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { readForm } from "./forms.ts";
import { html } from "./html.ts";
import { pageResponse, redirect } from "./page.ts";
import { sessionCookie, type SessionLimits, startSession } from "./session.ts";

/** Stands in for the console's own origin while a `next` value is resolved as the browser would resolve it. */
const HERE = "http://console.invalid";

/**
 * Where to go after signing in: a console page the form named, else the overview. The value is resolved as a browser
 * resolves a Location (backslashes as slashes, dot segments and their %2e spellings removed), and only a path
 * under /ui/ of the same origin is kept, in its resolved form, so what is checked is where the browser goes.
 */
export function nextPage(value: string | null): string {
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

/**
 * The sign-in page: single sign-on through the identity provider first when one is configured (a link, since the CSP's
 * form-action would stop a form from following the redirect to the provider), and the admin key's form, the
 * break-glass owner, which never has the key put back in it.
 */
export function signInPage(
  ctx: RequestContext,
  status: number,
  next: string,
  notice?: { text: string; tone: "ok" | "bad" },
  headers?: HeadersInit,
): Response {
  const oidc = ctx.deps.config.auth.oidc;
  const sso = oidc
    ? html`
      <div class="panel signin sso">
        <a class="button primary" href="/ui/auth/oidc?next=${encodeURIComponent(next)}">Sign in with single sign-on</a>
        <p class="muted">Through your team's identity provider, ${new URL(oidc.issuer).host}.</p>
      </div>
    `
    : "";
  const body = html`
    ${sso}
        <form method="post" action="/ui/login" class="panel signin">
          ${oidc ? html`<h2>Or with the admin key</h2>` : ""}
          <label>Admin key <input type="password" name="key" autocomplete="current-password" required ${oidc
            ? ""
            : "autofocus"}></label>
          <input type="hidden" name="next" value="${next}">
          <button type="submit" class="${oidc ? "" : "primary"}">Sign in</button>
          <p class="muted">The key is <code>MODELGATE_ADMIN_KEY</code> from the gateway's environment${oidc
            ? ", for the gateway's owner when single sign-on is not at hand"
            : ""}.</p>
        </form>
  `;
  return pageResponse({ title: "Sign in", body, notice }, status, headers);
}

export async function signIn(req: Request, ctx: RequestContext, adminKey: string): Promise<Response> {
  const form = await readForm(req, ctx.deps.config.body_idle_timeout_ms);
  const next = nextPage(form.get("next"));
  let attempt;
  try {
    attempt = ctx.deps.operator.guard.attempt("admin_key", ctx.peer.address);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const refusal = err;
    return signInPage(ctx, refusal.status, next, { text: refusal.message, tone: "bad" }, refusal.headers);
  }
  if (!await sameSecret(form.get("key") ?? "", adminKey)) {
    attempt.failed();
    return signInPage(ctx, 401, next, { text: "Wrong admin key.", tone: "bad" });
  }
  const { store } = ctx.deps;
  // Like every KV write, retried while another process holds the KV file.
  const now = ctx.deps.now();
  const options = { ...sessionLimits(ctx), now };
  const session = await store.writes.write("console_session", () => startSession(store.kv, adminKey, options));
  return redirect(next, { "set-cookie": sessionCookie({ ...session, now }, ctx.peer.https) });
}

/** The console's session lifetimes, from the config. */
export function sessionLimits(ctx: RequestContext): SessionLimits {
  return { maxMs: ctx.deps.config.console.session_max_ms, idleMs: ctx.deps.config.console.session_idle_ms };
}
