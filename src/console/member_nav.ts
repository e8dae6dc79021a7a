/**
 * @module The frame of a member's own pages: their two pages in the navigation (and nothing else), who is signed in,
 * and the answer for an operator who opens one of them.
 */
import type { ConsoleRequest } from "./context.ts";
import { type Html, html } from "./html.ts";
import { type NavLink, pageResponse, redirect } from "./page.ts";

/** A member's tokens: their home in the console. */
export const MY_TOKENS = "/ui/my/tokens";
/** A member's usage and spend. */
export const MY_USAGE = "/ui/my/usage";

/** The navigation a member sees: their own pages only. */
export const MEMBER_NAV: readonly NavLink[] = [
  { path: MY_TOKENS, title: "My tokens" },
  { path: MY_USAGE, title: "My usage" },
];

/** What a member's page puts in the frame. */
export interface MemberPage {
  title: string;
  nav: string;
  body: Html;
  notice?: { text: string; tone: "ok" | "bad" };
}

/** A member's page as an answer, with who is signed in above its body. */
export function memberResponse(c: ConsoleRequest, content: MemberPage, status = 200): Response {
  const who = html`<p class="muted">Signed in as <strong>${c.actor.email ?? c.actor.name}</strong>.</p>`;
  return pageResponse({ ...content, links: MEMBER_NAV, body: html`${who}${content.body}` }, status);
}

/**
 * The operator's page for what a member's page shows, for anyone but a member: the service scopes a member to their
 * own tokens, so for an operator "my" would read as everyone's.
 */
export function operatorsInstead(c: ConsoleRequest, path: string): Promise<Response> | undefined {
  if (c.actor.role === "member") return undefined;
  return (async () => {
    await c.req.body?.cancel();
    return redirect(path);
  })();
}
