/**
 * @module Signing in for an MCP client without an identity provider: the page that takes one of the person's tokens
 * (`sk-...`), and `POST /oauth/sign-in`, which checks it as every request's token is checked (wrong ones charged to the
 * address) and notes it on the authorization request, whose consent page comes next. The token itself is never kept:
 * the grant refers to it by id and by the hash the gateway stores anyway.
 */
import { authenticateFrom } from "../access/auth.ts";
import type { OAuthClient } from "../access/oauth_clients.ts";
import { attachSubject, readPending } from "../access/oauth_pending.ts";
import { hashToken } from "../access/store.ts";
import { field } from "../console/forms.ts";
import { html } from "../console/html.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { oauthPage, stopPage } from "./pages.ts";
import { browserSecret, ownForm } from "./reply.ts";

/** The page asking for a token, for request `id` of `client`. */
export function tokenSignInPage(
  client: Pick<OAuthClient, "client_name">,
  id: string,
  headers?: HeadersInit,
  notice?: { text: string; tone: "bad" },
  status = 200,
): Response {
  const body = html`
    <form method="post" action="/oauth/sign-in" class="panel signin">
      <p><strong>${client.client_name}</strong> asks to use this gateway's MCP tools for you. Sign in with one of your
        modelgate tokens; the app never sees it.</p>
      <label>Your token <input type="password" name="token" autocomplete="off" placeholder="sk-..." required
        autofocus></label>
      <input type="hidden" name="request" value="${id}">
      <button type="submit" class="primary">Continue</button>
    </form>
  `;
  return oauthPage({ title: "Sign in", body, notice }, status, { headers });
}

/** `POST /oauth/sign-in`: the token form's answer. */
export async function tokenSignIn(req: Request, ctx: RequestContext): Promise<Response> {
  const { deps, peer } = ctx;
  const form = await ownForm(req, ctx);
  const id = form.get("request");
  const now = deps.now();
  const pending = await readPending(deps.store, id, browserSecret(req, peer.https), now.getTime());
  if (!pending || !id) {
    return stopPage(400, "This sign-in is unknown, was started in another browser or took too long.");
  }
  const token = field(form, "token") ?? "";
  let principal;
  try {
    principal = await authenticateFrom(deps.operator.guard, deps.operator.credentials, {
      credential: token,
      address: peer.address,
      now,
    });
  } catch (err) {
    if (!(err instanceof GatewayError) || err.status >= 500 || err.kind === "rate_limit") throw err;
    deps.oauth.count("authorize", "refused");
    const notice = { text: `That token cannot be used: ${err.message}.`, tone: "bad" } as const;
    return tokenSignInPage(pending.value, id, undefined, notice, 401);
  }
  const { token: record } = principal;
  const subject = {
    kind: "token",
    token_id: record.id,
    token_hash: await hashToken(token),
    ...record.owner ? { owner: record.owner } : {},
  } as const;
  if (!await attachSubject(deps.store, id, subject, now.getTime())) {
    return stopPage(410, "This sign-in took too long; start again from your app.");
  }
  const response = new Response(null, { status: 303 });
  response.headers.set("location", `/oauth/consent?request=${encodeURIComponent(id)}`);
  return response;
}
