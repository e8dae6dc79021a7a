/**
 * @module The frame every console page shares (head, navigation, sign-out, footer), the security headers every
 * console answer carries, and the answers themselves: a page, a redirect, a page that reports an error.
 */
import { ASSET_URLS } from "./assets.ts";
import { type Html, html, htmlText } from "./html.ts";

/**
 * Script only from the gateway's own files (no inline script, no eval), styles only from its style sheet, nothing
 * fetched from elsewhere, forms posted only back to the console, and no framing by another site.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** Sets the headers every console answer carries. */
export function secure(response: Response): Response {
  const headers = response.headers;
  headers.set("content-security-policy", CONTENT_SECURITY_POLICY);
  headers.set("x-content-type-options", "nosniff");
  headers.set("x-frame-options", "DENY");
  // Not "no-referrer": with it, browsers send `Origin: null` on form posts, and the Origin check needs the origin.
  headers.set("referrer-policy", "same-origin");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  return response;
}

/** One entry of the navigation. */
export interface NavLink {
  path: string;
  title: string;
}

/** The pages in the navigation, in order. */
const NAV: NavLink[] = [
  { path: "/ui/", title: "Overview" },
  { path: "/ui/tokens", title: "Tokens" },
  { path: "/ui/groups", title: "Groups" },
  { path: "/ui/usage", title: "Usage" },
  { path: "/ui/requests", title: "Request log" },
  { path: "/ui/upstreams", title: "Upstreams and models" },
  { path: "/ui/mcp", title: "MCP" },
  { path: "/ui/batches", title: "Batches" },
  { path: "/ui/operators", title: "Operator keys" },
  { path: "/ui/people", title: "People" },
  { path: "/ui/audit", title: "Audit trail" },
];

/** What a page puts in the frame. */
export interface PageContent {
  title: string;
  /** The navigation entry to highlight; none on the sign-in page, which also has no navigation. */
  nav?: string;
  /** The navigation's entries when not the operator's pages (a member's own pages). */
  links?: readonly NavLink[];
  body: Html;
  /** A line at the top: a confirmation, or an error that came back from the service. */
  notice?: { text: string; tone: "ok" | "bad" };
}

/** A whole page. */
export function page(content: PageContent): Html {
  const nav = content.nav === undefined ? "" : html`<header class="top"><a class="brand" href="/ui/">modelgate</a>
<nav>${
    (content.links ?? NAV).map((item) =>
      html`
        <a href="${item.path}" ${item.path === content.nav
          ? html`
            aria-current="page"
          `
          : ""}>${item.title}</a>
      `
    )
  }</nav>
<form method="post" action="/ui/logout" class="signout"><button type="submit" class="quiet">Sign out</button></form>
</header>`;
  const notice = content.notice
    ? html`<p class="notice ${content.notice.tone}" role="${
      content.notice.tone === "bad" ? "alert" : "status"
    }">${content.notice.text}</p>`
    : "";
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>${content.title} · modelgate</title>
        <link rel="icon" href="${ASSET_URLS.icon}">
        <link rel="stylesheet" href="${ASSET_URLS.style}">
        <script src="${ASSET_URLS.script}" defer></script>
      </head>
      <body>${nav}<main><h1>${content.title}</h1>${notice}${content.body}</main>
    <footer>Times are shown in <span data-zone>UTC</span>. Usage is counted per UTC day.</footer></body>
    </html>
  `;
}

/** A page as an answer. */
export function pageResponse(content: PageContent, status = 200, headers?: HeadersInit): Response {
  const response = new Response(htmlText(page(content)), { status, headers });
  response.headers.set("content-type", "text/html; charset=utf-8");
  return response;
}

/** The start of the sign-out form in every page's header, where {@linkcode withSignedIn} puts who is signed in. */
const SIGN_OUT = '<form method="post" action="/ui/logout" class="signout">';

/**
 * The page with who is signed in (an email or "admin key", and the role) named in its header beside "Sign out"; an
 * answer that is no page with a header is left as it is.
 */
export async function withSignedIn(response: Response, who: { name: string; role: string }): Promise<Response> {
  if (!response.headers.get("content-type")?.startsWith("text/html") || !response.body) return response;
  const text = await response.text();
  const label = htmlText(html`<span class="who" title="${who.name} · ${who.role}">${who.name} · ${who.role}</span>`);
  const { status, headers } = response;
  return new Response(text.replace(SIGN_OUT, `${label}${SIGN_OUT}`), { status, headers });
}

/** A redirect after a form was handled, so a reload does not send it again. */
export function redirect(location: string, headers?: HeadersInit): Response {
  const response = new Response(null, { status: 303, headers });
  response.headers.set("location", location);
  return response;
}
