/**
 * @module What a console page works with: the request, the app's dependencies, the admin service every read and
 * change goes through, and the shape of one entry in the console's route table.
 */
import type { Actor } from "../admin/audit.ts";
import type { AdminService } from "../admin/service.ts";
import { GatewayError } from "../core/errors.ts";
import type { Deps } from "../handlers/context.ts";

/** One request to a console page, once the session is checked. */
export interface ConsoleRequest {
  req: Request;
  url: URL;
  deps: Deps;
  /** The admin API's service: the console reads and changes tokens, groups and usage only through it. */
  service: AdminService;
  /** Who the session acts as: the admin key, or a signed-in person with their role. */
  actor: Actor;
  /** Path parameters of the route's pattern, decoded. */
  params: Record<string, string>;
  now: Date;
}

/**
 * One console route: a method, a path under /ui with `:name` parameters, and its handler. A signed-in `member` may
 * open only the routes marked `member`; a `viewer` no POST route.
 */
export interface ConsoleRoute {
  method: "GET" | "POST";
  path: string;
  /** True for the pages a member may open (their own tokens and usage). */
  member?: boolean;
  handle(c: ConsoleRequest): Promise<Response>;
}

/** Confirmations a page shows after a redirect, by the code in `?done=`; fixed texts, never the request's words. */
export const DONE: Record<string, string> = {
  saved: "Saved.",
  revoked: "Revoked: the token answers 401 from now on.",
  "revoked-key": "Revoked: the key answers 401 from now on.",
  "revoked-grant": "Revoked: the client's tokens answer 401 from its next call on.",
  restored: "Restored: the token works again.",
  created: "Created.",
  deleted: "Deleted.",
  "signed-out": "Signed out.",
  removed: "Removed: their sessions end at their next page.",
  "canceled-batch": "Cancel asked: the batch ends once its provider has stopped its running requests.",
};

/** The confirmation for the page's `?done=` code, if it has a known one. */
export function doneNotice(url: URL): { text: string; tone: "ok" } | undefined {
  const text = DONE[url.searchParams.get("done") ?? ""];
  return text ? { text, tone: "ok" } : undefined;
}

/** The error when it is the caller's to fix (bad input, unknown id, a conflict), so a page shows it; else undefined. */
export function refusal(err: unknown): GatewayError | undefined {
  return err instanceof GatewayError && err.status < 500 ? err : undefined;
}
