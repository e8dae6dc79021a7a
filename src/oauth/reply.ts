/**
 * @module How /mcp's OAuth answers: errors in OAuth's JSON shape (RFC 6749, section 5.2; RFC 7591, section 3.2.2),
 * JSON that is never cached, CORS for the endpoints a browser-based client calls, the redirect back to a client with
 * a code or an error, and the cookie that binds an authorization request to the browser that started it.
 */
import { readForm } from "../console/forms.ts";
import { sameOrigin } from "../console/session.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import type { RequestContext } from "../handlers/context.ts";

/** An OAuth error with its code; invalid_client answers 401, the rest 400. */
export function oauthError(code: string, description: string): GatewayError {
  return new GatewayError(code === "invalid_client" ? "authentication" : "invalid_request", description, { code });
}

/** The headers that let a page of any origin call the JSON endpoints and read their answers (no cookies involved). */
export const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Authorization, Content-Type, MCP-Protocol-Version",
  "access-control-expose-headers": "WWW-Authenticate",
  "access-control-max-age": "86400",
};

/** A JSON answer: never cached, readable from any origin. */
export function oauthJson(body: unknown, status = 200): Response {
  return json(body, { status, headers: { ...CORS_HEADERS, "cache-control": "no-store", pragma: "no-cache" } });
}

/** An error as OAuth clients read it; a code outside OAuth's is answered as invalid_request. */
export function errorJson(err: GatewayError): Response {
  const code = err.code && /^[a-z_]+$/.test(err.code) && err.code !== "invalid_api_key" ? err.code : "invalid_request";
  const response = oauthJson({ error: code, error_description: err.message }, err.status);
  for (const [name, value] of err.headers) response.headers.set(name, value);
  return response;
}

/** A redirect to the client's registered redirect URI with `params` (a code, or an error) and the issuer. */
export function redirectBack(redirectUri: string, params: Record<string, string | undefined>, headers?: HeadersInit) {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  const response = new Response(null, { status: 303, headers });
  response.headers.set("location", url.href);
  response.headers.set("cache-control", "no-store");
  return response;
}

/** The browser cookie over http (for /oauth only) and over https (`__Host-`: Secure, this host's alone). */
const COOKIE = "modelgate_oauth";
const HOST_COOKIE = "__Host-modelgate_oauth";

/** The secret of the browser's OAuth cookie, when it has one. */
export function browserSecret(req: Request, https: boolean): string | undefined {
  const wanted = https ? HOST_COOKIE : COOKIE;
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [name, value] = part.trim().split("=", 2);
    if (name === wanted && value && /^[A-Za-z0-9_-]{43}$/.test(value)) return value;
  }
  return undefined;
}

/**
 * The Set-Cookie value of the browser's secret. SameSite=Lax: the person arrives from the client's site and comes
 * back from the identity provider's by top-level navigations, which a Strict cookie would miss.
 */
export function browserCookie(secret: string, https: boolean, maxAgeS: number): string {
  const scope = https ? "Path=/; HttpOnly; SameSite=Lax; Secure" : "Path=/oauth; HttpOnly; SameSite=Lax";
  return `${https ? HOST_COOKIE : COOKIE}=${secret}; Max-Age=${maxAgeS}; ${scope}`;
}

/** The form a person's page posted, or a 403 when it did not come from the gateway's own page (its Origin). */
export async function ownForm(req: Request, ctx: RequestContext): Promise<URLSearchParams> {
  if (!sameOrigin(req, ctx.peer)) {
    await req.body?.cancel();
    throw new GatewayError("permission", "This form did not come from the gateway's own page.");
  }
  return await readForm(req, ctx.deps.config.body_idle_timeout_ms);
}
