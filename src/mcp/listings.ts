/**
 * @module The merged listings a client gets (tools/list, prompts/list, resources/list, resources/templates/list): what
 * the servers its group may use offer, filtered by the grant and renamed, in pages of at most `mcp.list_page_bytes`
 * joined by MCP's `nextCursor` (see docs/mcp.md, "Listings").
 */
import type { McpGrant } from "../core/mcp_config.ts";
import type { JsonObject } from "../core/types.ts";
import type { Listing } from "./catalog.ts";
import type { McpHub } from "./hub.ts";
import { CODES, paramsOf, RpcError, type RpcRequest } from "./jsonrpc.ts";
import { allows, allowsAll, exposedUri, grantedServers } from "./names.ts";

/** The servers of `grant` that are configured, in the grant's order. */
export function grantedHere(hub: McpHub, grant: McpGrant | undefined): string[] {
  const configured = new Set(hub.servers.map((server) => server.name));
  return grantedServers(grant).filter((name) => configured.has(name));
}

/** One listing method: the field its items go in, and one server's items as the group sees them. */
interface ListKind {
  field: string;
  items(server: string, listing: Listing, grant: McpGrant | undefined): JsonObject[];
}

const named = (kind: "tools" | "prompts"): ListKind => ({
  field: kind,
  items: (server, listing, grant) =>
    listing[kind].filter((item) => allows(grant, server, kind, item.name as string))
      .map((item) => ({ ...item, name: listing.names[kind].exposed.get(item.name as string) })),
});

/** The listing methods; a Map, so that a client's method name is never looked up among an object's own. */
const KINDS = new Map<string, ListKind>([
  ["tools/list", named("tools")],
  ["prompts/list", named("prompts")],
  ["resources/list", {
    field: "resources",
    items: (server, listing, grant) =>
      listing.resources.filter((item) => allows(grant, server, "resources", item.uri as string))
        .map((item) => ({ ...item, uri: exposedUri(server, item.uri as string) })),
  }],
  ["resources/templates/list", {
    field: "resourceTemplates",
    // A template lets a client name any URI, which only a grant of all the server's resources covers.
    items: (server, listing, grant) =>
      allowsAll(grant, server, "resources")
        ? listing.templates.map((item) => ({ ...item, uriTemplate: exposedUri(server, item.uriTemplate as string) }))
        : [],
  }],
]);

/** Where a page starts: a server, and the index of its first item there. */
interface Cursor {
  server: string;
  index: number;
}

function cursorText(cursor: Cursor): string {
  return btoa(JSON.stringify([cursor.server, cursor.index]));
}

/** The cursor a client sent back, or an Invalid params error when it is none the gateway gave for these servers. */
function readCursor(value: unknown, servers: readonly string[]): Cursor | undefined {
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = typeof value === "string" ? JSON.parse(atob(value)) : undefined;
  } catch {
    // Not one of the gateway's: refused below.
  }
  if (
    Array.isArray(parsed) && parsed.length === 2 && servers.includes(parsed[0]) && Number.isSafeInteger(parsed[1]) &&
    parsed[1] >= 0
  ) {
    return { server: parsed[0], index: parsed[1] };
  }
  throw new RpcError(CODES.invalidParams, "Invalid params: cursor is not one the gateway gave; list again without it");
}

/**
 * The answer to a listing method, one page of it, merged over the granted servers in the grant's order; undefined for
 * any other method. A page holds items up to `pageBytes` of JSON (at least one), and `nextCursor` when more follow. A
 * server that cannot be listed is left out (its health says why).
 */
export async function listAnswer(
  hub: McpHub,
  grant: McpGrant | undefined,
  request: RpcRequest,
  pageBytes: number,
): Promise<JsonObject | undefined> {
  const kind = KINDS.get(request.method);
  if (!kind) return undefined;
  const servers = grantedHere(hub, grant);
  const start = readCursor(paramsOf(request).cursor, servers);
  const wanted = start ? servers.slice(servers.indexOf(start.server)) : servers;
  const settled = await Promise.allSettled(wanted.map((name) => hub.catalog.listing(name)));
  const page: JsonObject[] = [];
  let bytes = 0;
  for (const [s, server] of wanted.entries()) {
    const listed = settled[s];
    if (listed.status === "rejected") continue;
    const items = kind.items(server, listed.value, grant);
    for (let i = s === 0 && start ? start.index : 0; i < items.length; i++) {
      const size = JSON.stringify(items[i]).length;
      if (page.length > 0 && bytes + size > pageBytes) {
        return { [kind.field]: page, nextCursor: cursorText({ server, index: i }) };
      }
      page.push(items[i]);
      bytes += size;
    }
  }
  return { [kind.field]: page };
}
