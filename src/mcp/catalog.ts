/**
 * @module What each server offers (tools, prompts, resources and resource templates), asked on the gateway's own
 * session, kept for `list_ttl_ms`, and each server's health as those listings find it: a server that cannot be listed
 * is down, its tools left out of every listing, and asked again only after a backoff, so a dead server costs the
 * others' listings nothing.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { RpcError } from "./jsonrpc.ts";
import { type NameTable, nameTable } from "./names.ts";

/** What one server offers, as it listed it: each item once, by its name (or URI), those without one left out. */
export interface Listing {
  tools: JsonObject[];
  prompts: JsonObject[];
  resources: JsonObject[];
  templates: JsonObject[];
  /** The names its tools and prompts are given (see docs/mcp.md, "Names"). */
  names: { tools: NameTable; prompts: NameTable };
  /** Epoch milliseconds when it was listed. */
  at: number;
}

/** How the catalog reaches one server. */
export interface CatalogSource {
  /** The capabilities the server declared on the gateway's own session (opening it when needed). */
  capabilities(signal: AbortSignal): Promise<JsonObject>;
  /** One page of a listing: the result of `method` from `cursor`. */
  page(method: string, cursor: string | undefined, signal: AbortSignal): Promise<JsonObject>;
  listTimeoutMs: number;
}

/** A server's health as its listings found it. */
export interface Health {
  state: "unknown" | "up" | "down";
  error?: string;
  /** Epoch milliseconds since when. */
  since?: number;
}

/** The catalog of every server. */
export interface Catalog {
  /** The server's listing, fresh within the TTL; throws an {@linkcode RpcError} when the server cannot be listed. */
  listing(server: string): Promise<Listing>;
  /** Forgets a listing, so the next one is asked for again (the server said a list changed). */
  invalidate(server: string): void;
  health(server: string): Health;
  /** The listing last made, however old, without asking. */
  last(server: string): Listing | undefined;
}

/** Each kind of listing: the capability it needs, its method, and the result field holding its items. */
const KINDS = [
  { capability: "tools", method: "tools/list", field: "tools", into: "tools", key: "name" },
  { capability: "prompts", method: "prompts/list", field: "prompts", into: "prompts", key: "name" },
  { capability: "resources", method: "resources/list", field: "resources", into: "resources", key: "uri" },
  {
    capability: "resources",
    method: "resources/templates/list",
    field: "resourceTemplates",
    into: "templates",
    key: "uriTemplate",
  },
] as const;

/** The most pages one listing follows: a server that pages on forever is cut off there. */
const MAX_PAGES = 100;

/** The wait after `failures` failed listings in a row before the next: 2 s doubling up to a minute. */
function retryMs(failures: number): number {
  return Math.min(60_000, 2000 * 2 ** Math.max(0, failures - 1));
}

interface Entry {
  listing?: Listing;
  refreshing?: Promise<Listing>;
  health: Health;
  failures: number;
  retryAt: number;
}

/** The catalog over `sources`; `closing` aborts listings under way when the gateway stops. */
export function createCatalog(
  sources: ReadonlyMap<string, CatalogSource>,
  options: {
    now(): number;
    ttlMs: number;
    /** `mcp.name_max_length`: how long a name the tools and prompts are given. */
    maxLength: number;
    closing?: AbortSignal;
    log(line: Record<string, unknown>): void;
  },
): Catalog {
  const entries = new Map<string, Entry>();
  const entry = (server: string) => {
    let found = entries.get(server);
    if (!found) entries.set(server, found = { health: { state: "unknown" }, failures: 0, retryAt: 0 });
    return found;
  };

  async function list(server: string, source: CatalogSource): Promise<Listing> {
    const signal = AbortSignal.any([
      AbortSignal.timeout(source.listTimeoutMs),
      ...options.closing ? [options.closing] : [],
    ]);
    const capabilities = await source.capabilities(signal);
    const found: Omit<Listing, "names" | "at"> = { tools: [], prompts: [], resources: [], templates: [] };
    for (const kind of KINDS) {
      if (!isObject(capabilities[kind.capability])) continue;
      const listed = new Set<string>();
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        let result: JsonObject;
        try {
          result = await source.page(kind.method, cursor, signal);
        } catch (err) {
          // A server that declares resources but not templates answers that listing with an error: it has none.
          if (err instanceof RpcError && err.code > -32700 && err.code <= -32600) break;
          throw err;
        }
        const items = result[kind.field];
        // Names must be unique in a listing: an item without its name, or under one already listed, is left out.
        for (const item of Array.isArray(items) ? items : []) {
          const name = isObject(item) ? item[kind.key] : undefined;
          if (typeof name !== "string" || listed.has(name)) continue;
          listed.add(name);
          found[kind.into].push(item as JsonObject);
        }
        cursor = typeof result.nextCursor === "string" && result.nextCursor !== "" ? result.nextCursor : undefined;
        if (!cursor) break;
      }
    }
    const names = (items: JsonObject[]) =>
      nameTable(server, items.map((item) => item.name as string), options.maxLength);
    return { ...found, names: { tools: names(found.tools), prompts: names(found.prompts) }, at: options.now() };
  }

  function refresh(server: string, found: Entry): Promise<Listing> {
    const source = sources.get(server);
    if (!source) return Promise.reject(new RpcError(-32602, `Unknown MCP server "${server}"`));
    found.refreshing ??= list(server, source).then((listing) => {
      found.listing = listing;
      found.failures = 0;
      if (found.health.state !== "up") found.health = { state: "up", since: options.now() };
      return listing;
    }, (err) => {
      found.failures++;
      found.retryAt = options.now() + retryMs(found.failures);
      const why = options.closing?.aborted ? "the gateway is stopping" : "it did not answer in time";
      const error = err instanceof RpcError ? err.message : `MCP server "${server}" is unavailable: ${why}`;
      if (found.health.state !== "down" || found.health.error !== error) {
        found.health = { state: "down", error, since: options.now() };
        options.log({ level: "warn", event: "mcp_server_down", server, error });
      }
      throw new RpcError(-32000, error);
    }).finally(() => found.refreshing = undefined);
    return found.refreshing;
  }

  return {
    listing(server) {
      const found = entry(server);
      const now = options.now();
      if (found.listing && now - found.listing.at < options.ttlMs && found.health.state === "up") {
        return Promise.resolve(found.listing);
      }
      if (found.health.state === "down" && now < found.retryAt && !found.refreshing) {
        return Promise.reject(new RpcError(-32000, found.health.error ?? `MCP server "${server}" is unavailable`));
      }
      return refresh(server, found);
    },
    invalidate(server) {
      const found = entries.get(server);
      if (found?.listing) found.listing = { ...found.listing, at: -Infinity };
    },
    health: (server) => ({ ...entry(server).health }),
    last: (server) => entries.get(server)?.listing,
  };
}
