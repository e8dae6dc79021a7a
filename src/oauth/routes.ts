/**
 * @module The OAuth authorization server of /mcp behind its entries in the app's table: served only while it is on,
 * and over HTTPS or on loopback (else 404 saying why); the discovery documents, the JSON endpoints (with CORS and
 * their preflights) and the person's pages; errors in OAuth's shape, or as a page for the pages.
 */
import { oauthBase } from "../access/oauth_rules.ts";
import { GatewayError, toGatewayError } from "../core/errors.ts";
import type { RequestContext } from "../handlers/context.ts";
import { authorize } from "./authorize.ts";
import { decideConsent, showConsent } from "./consent.ts";
import { RESOURCE_METADATA_PATHS, resourceMetadata, SERVER_METADATA_PATHS, serverMetadata } from "./metadata.ts";
import { oauthAsset, stopPage } from "./pages.ts";
import { register } from "./register.ts";
import { CORS_HEADERS, errorJson, oauthJson } from "./reply.ts";
import { tokenSignIn } from "./signin.ts";
import { revokeEndpoint, tokenEndpoint } from "./token.ts";

type Handler = (req: Request, ctx: RequestContext, base: string) => Promise<Response>;

/** The JSON endpoints under /oauth, by method and path; clients in a browser may call them from any origin. */
const JSON_ROUTES: Partial<Record<string, Handler>> = {
  "POST /oauth/token": tokenEndpoint,
  "POST /oauth/register": register,
  "POST /oauth/revoke": revokeEndpoint,
};

/** The person's pages under /oauth, by method and path. */
const PAGE_ROUTES: Partial<Record<string, Handler>> = {
  "GET /oauth/authorize": authorize,
  "POST /oauth/sign-in": tokenSignIn,
  "GET /oauth/consent": showConsent,
  "POST /oauth/consent": decideConsent,
};

/** A 404 as an unknown path answers, in OAuth's shape. */
function notServed(req: Request, why: string): Response {
  return oauthJson(
    { error: "not_found", error_description: `${req.method} ${new URL(req.url).pathname}: ${why}` },
    404,
  );
}

/** Serves one request to a well-known path or under /oauth. */
export async function oauthRoutes(req: Request, ctx: RequestContext): Promise<Response> {
  const path = new URL(req.url).pathname.replace(/\/+$/, "");
  const method = req.method === "HEAD" ? "GET" : req.method;
  if (!ctx.deps.oauth.enabled) {
    await req.body?.cancel();
    throw new GatewayError("not_found", `Unknown path: ${req.method} ${path}`, { code: "unknown_url" });
  }
  const base = oauthBase(ctx.peer);
  if (!base) {
    await req.body?.cancel();
    return notServed(
      req,
      "OAuth is served over HTTPS only (or on loopback); behind a TLS proxy, list it in trusted_proxies",
    );
  }
  const page = PAGE_ROUTES[`${method} ${path}`];
  if (page) return await answered(req, () => page(req, ctx, base), (e) => stopPage(e.status, e.message, e.headers));
  if (method === "GET" && path.startsWith("/oauth/assets/")) {
    return oauthAsset(path.slice(6)) ?? notServed(req, "no such file");
  }
  // A preflight asks for the method it will use: every JSON endpoint is a POST.
  const json = JSON_ROUTES[`${method === "OPTIONS" ? "POST" : method} ${path}`];
  const metadata = RESOURCE_METADATA_PATHS.includes(path)
    ? resourceMetadata
    : SERVER_METADATA_PATHS.includes(path)
    ? serverMetadata
    : undefined;
  if (method === "OPTIONS" && (json !== undefined || metadata !== undefined)) {
    return new Response(null, { status: 204, headers: CORS_HEADERS });
  }
  if (metadata && method === "GET") return oauthJson(metadata(base));
  if (!json) {
    await req.body?.cancel();
    return notServed(req, "no such OAuth endpoint, or not with this method");
  }
  return await answered(req, () => json(req, ctx, base), errorJson);
}

/** A handler's answer, or its refusal as `render` shows it; an internal error goes to the app's error path. */
async function answered(
  req: Request,
  handle: () => Promise<Response>,
  render: (error: GatewayError) => Response,
): Promise<Response> {
  try {
    return await handle();
  } catch (err) {
    if (req.body && !req.bodyUsed) await req.body.cancel().catch(() => {});
    const error = toGatewayError(err);
    if (error.kind === "internal") throw err;
    return render(error);
  }
}
