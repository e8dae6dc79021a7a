/**
 * @module `GET /oauth/authorize`: an MCP client's authorization request. The client and its redirect URI are checked
 * first (a request that fails there is answered with a page and sent nowhere); then the request itself (the code
 * flow, PKCE S256, the resource of this /mcp, a state of sane length), whose refusals go back to the client. A good
 * request is kept, bound to the browser, and the person signs in: through the team's identity provider by the
 * console's own sign-in and callback, or without one, with one of their tokens (./signin.ts).
 */
import { findClient, type OAuthClient } from "../access/oauth_clients.ts";
import { PENDING_MS, randomId, startPending } from "../access/oauth_pending.ts";
import { CHALLENGE_SHAPE, MAX_URI_LENGTH, mcpResource, redirectMatches, sameResource } from "../access/oauth_rules.ts";
import { startOidc } from "../console/oidc_signin.ts";
import { GatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { stopPage } from "./pages.ts";
import { browserCookie, browserSecret, redirectBack } from "./reply.ts";
import { tokenSignInPage } from "./signin.ts";

/** What is wrong with a request whose client and redirect are good, as an OAuth error code and its description. */
function requestProblem(query: URLSearchParams, base: string): [string, string] | undefined {
  if (query.get("response_type") !== "code") {
    return ["unsupported_response_type", "response_type: only code is supported"];
  }
  const challenge = query.get("code_challenge");
  if (!challenge || !CHALLENGE_SHAPE.test(challenge)) {
    return ["invalid_request", "code_challenge: required, the S256 challenge of a PKCE verifier"];
  }
  if (query.get("code_challenge_method") !== "S256") {
    return ["invalid_request", "code_challenge_method: must be S256"];
  }
  const resource = query.get("resource");
  const expected = mcpResource(base);
  if (resource === null) return ["invalid_target", `resource: required, ${expected}`];
  if (!sameResource(resource, expected)) return ["invalid_target", `resource: must be ${expected}`];
  const state = query.get("state");
  if (state !== null && state.length > MAX_URI_LENGTH) {
    return ["invalid_request", `state: at most ${MAX_URI_LENGTH} characters`];
  }
  return undefined;
}

/** The audit entry of a refused authorization request of a known client. */
function refused(ctx: RequestContext, req: Request, client: OAuthClient, reason: string) {
  ctx.deps.oauth.count("authorize", "refused");
  return ctx.deps.oauth.audit({
    who: `client ${client.client_name}`,
    action: "oauth.refused",
    target: client.client_id,
    after: { step: "authorize", reason, client_name: client.client_name },
    ip: ctx.peer.address,
    user_agent: req.headers.get("user-agent") ?? undefined,
  });
}

/** `GET /oauth/authorize`. */
export async function authorize(req: Request, ctx: RequestContext, base: string): Promise<Response> {
  const { deps, peer } = ctx;
  const query = new URL(req.url).searchParams;
  let client: OAuthClient;
  try {
    client = await findClient(deps.store, query.get("client_id"), { fetch: deps.oauth.fetch, now: deps.now() });
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    deps.oauth.count("authorize", "refused");
    return stopPage(400, err.message);
  }
  const redirect = query.get("redirect_uri");
  if (!redirect || !client.redirect_uris.some((registered) => redirectMatches(registered, redirect))) {
    const text = redirect ? "redirect_uri: not one this client registered" : "redirect_uri: required";
    await refused(ctx, req, client, text);
    return stopPage(400, text);
  }
  const state = query.get("state") ?? undefined;
  const problem = requestProblem(query, base);
  if (problem) {
    await refused(ctx, req, client, problem[1]);
    return redirectBack(redirect, { error: problem[0], error_description: problem[1], state, iss: base });
  }
  const browser = browserSecret(req, peer.https) ?? randomId();
  const request = {
    client_id: client.client_id,
    client_name: client.client_name,
    redirect_uri: redirect,
    code_challenge: query.get("code_challenge")!,
    ...state === undefined ? {} : { state },
    resource: mcpResource(base),
  };
  const id = await startPending(deps.store, request, browser, deps.now().getTime());
  deps.oauth.count("authorize", "ok");
  const cookie = browserCookie(browser, peer.https, PENDING_MS / 1000);
  const { oidc, adminKey } = deps.operator;
  if (oidc && adminKey) {
    const response = await startOidc(ctx, oidc, adminKey, "/ui/", id);
    response.headers.append("set-cookie", cookie);
    return response;
  }
  return tokenSignInPage(client, id, { "set-cookie": cookie });
}
