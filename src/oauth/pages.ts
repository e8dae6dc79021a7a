/**
 * @module The pages a person sees while an MCP client signs them in: a plain frame with the console's style sheet
 * (served under /oauth too, since the console may be off), the security headers of the console's pages, and a
 * form-action that also allows the one place the consent form's answer sends the browser: the client's redirect URI.
 */
import { asset } from "../console/assets.ts";
import { type Html, html, htmlText } from "../console/html.ts";

/** The style sheet's URL under /oauth. */
const STYLE = "/oauth/assets/console.css";

/** The style sheet, when `path` (under /oauth) asks for it. */
export function oauthAsset(path: string): Response | undefined {
  return path === "/assets/console.css" ? asset("console.css") : undefined;
}

/**
 * The CSP source a form's redirect to `uri` needs besides 'self': its origin for http(s), its scheme for an app's own
 * (`cursor:`); browsers check a form's redirects against form-action too.
 */
function formTarget(uri: string | undefined): string {
  if (!uri) return "";
  const url = new URL(uri);
  const source = url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol;
  // Only what a CSP source may hold: a validated URI never has more, and a stray character must not end the header.
  return /^[a-z][a-z0-9+.-]*:(\/\/[A-Za-z0-9.:[\]-]+)?$/.test(source) ? ` ${source}` : "";
}

/** The headers of every OAuth page: no script at all, styles from the gateway, no framing, nothing cached. */
function pageHeaders(redirectTo: string | undefined): Headers {
  const csp = [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self'",
    `form-action 'self'${formTarget(redirectTo)}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join("; ");
  return new Headers({
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": csp,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
  });
}

/** A whole page: a title, a notice when there is one, and the body. */
export function oauthPage(
  content: { title: string; body: Html; notice?: { text: string; tone: "ok" | "bad" } },
  status = 200,
  options: { redirectTo?: string; headers?: HeadersInit } = {},
): Response {
  const notice = content.notice
    ? html`<p class="notice ${content.notice.tone}" role="${
      content.notice.tone === "bad" ? "alert" : "status"
    }">${content.notice.text}</p>`
    : "";
  const page = html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${content.title} · modelgate</title>
    <link rel="stylesheet" href="${STYLE}">
  </head>
  <body>
    <header class="top"><span class="brand">modelgate</span></header>
    <main class="oauth"><h1>${content.title}</h1>${notice}${content.body}</main>
  </body>
</html>`;
  const headers = pageHeaders(options.redirectTo);
  for (const [name, value] of new Headers(options.headers)) headers.append(name, value);
  return new Response(htmlText(page), { status, headers });
}

/** A page saying why the sign-in cannot go on, sent nowhere (the client's redirect is not to be trusted yet). */
export function stopPage(status: number, text: string, headers?: HeadersInit): Response {
  const body = html`<p>Start again from the app that sent you here.</p>`;
  return oauthPage({ title: "Cannot sign in", body, notice: { text, tone: "bad" } }, status, { headers });
}
