/**
 * @module The gateway's MCP servers, built from `mcp_servers`: a link to each (HTTP or stdio), the catalog of what they
 * offer, the clients' sessions, and one call on a server for a client session within the server's time limit. An HTTP
 * server gets a session of its own per client session, opened at its first call and kept in the client's record; a stdio
 * server is one process shared by all. Nothing is started or opened before it is first needed.
 */
import type { Config, McpServerConfig } from "../core/config.ts";
import type { KvWriter } from "../core/kv_write.ts";
import { textRedactor } from "../core/redact.ts";
import type { JsonObject } from "../core/types.ts";
import { type Catalog, type CatalogSource, createCatalog, type Health } from "./catalog.ts";
import { type HttpLink, httpLink, SessionGone, type UpstreamSession } from "./http_link.ts";
import { CODES, RpcError, type RpcNotification, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";
import { type ClientSession, type SessionStore, sessionStore, type UpstreamRef } from "./sessions.ts";
import { mcpSecrets } from "./secrets.ts";
import { type LinkState, type StdioLink, stdioLink } from "./stdio_link.ts";

/** How one call is made. */
export interface CallOptions {
  /** The client's signal: aborted when it goes away. */
  signal: AbortSignal;
  /** A notification the server sent about this call (progress, a log message). */
  onNotice?(notice: RpcNotification): void;
}

/** One server as the console shows it. */
export interface ServerView {
  name: string;
  transport: "http" | "stdio";
  health: Health;
  /** A stdio server's process. */
  process?: LinkState;
}

/** The MCP side of one gateway instance. */
export interface McpHub {
  readonly servers: readonly McpServerConfig[];
  readonly sessions: SessionStore;
  readonly catalog: Catalog;
  /** Sends `request` to `server` for `session`; throws an {@linkcode RpcError} the client can be told. */
  call(server: string, session: ClientSession, request: RpcRequest, options: CallOptions): Promise<RpcResponse>;
  /** Remembers a call running here, so a cancellation that reaches this instance stops it; returns the forgetting. */
  track(session: ClientSession, id: RpcRequest["id"], stop: AbortController): () => void;
  /** Stops the named call if it runs here, and passes the cancellation on to the HTTP servers the session opened. */
  cancel(session: ClientSession, notification: RpcNotification): Promise<void>;
  /** Ends the sessions a client session opened with servers. */
  end(session: ClientSession): Promise<void>;
  views(): ServerView[];
  /** Stops the stdio servers. */
  close(): Promise<void>;
  /** Takes the servers' credentials out of a text on its way to a client (a server may quote them). */
  redact(text: string): string;
}

/** What the hub needs of the process. */
export interface McpHubOptions {
  env(name: string): string | undefined;
  fetch: typeof fetch;
  log(line: Record<string, unknown>): void;
  now(): number;
  kv: Deno.Kv;
  writes: KvWriter;
  /** Aborted when the gateway stops: listings under way give up. */
  closing?: AbortSignal;
}

type Link = { kind: "http"; link: HttpLink; own?: Promise<UpstreamSession> } | { kind: "stdio"; link: StdioLink };

/** The error for a call that ran out of time. */
function timedOut(config: McpServerConfig): RpcError {
  return new RpcError(CODES.timeout, `MCP server "${config.name}" did not answer within ${config.timeout_ms} ms`);
}

/** Each server's health as the metrics show it: up or not, for the servers asked at least once. */
export function mcpHealth(hub: McpHub): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const view of hub.views()) if (view.health.state !== "unknown") out.set(view.name, view.health.state === "up");
  return out;
}

/** Builds the hub of `config.mcp_servers`. */
export function createHub(config: Config, options: McpHubOptions): McpHub {
  const configs = new Map(config.mcp_servers.map((server) => [server.name, server]));
  const links = new Map<string, Link>();
  const sources = new Map<string, CatalogSource>();
  const invalidate = (name: string) => () => catalog.invalidate(name);
  for (const server of config.mcp_servers) {
    const link: Link = server.url
      ? { kind: "http", link: httpLink(server, options) }
      : { kind: "stdio", link: stdioLink(server, { ...options, onListChanged: invalidate(server.name) }) };
    links.set(server.name, link);
    sources.set(server.name, catalogSource(server, link));
  }
  const catalog = createCatalog(sources, {
    now: options.now,
    ttlMs: config.mcp.list_ttl_ms,
    closing: options.closing,
    log: options.log,
  });
  const secretsRedactor = textRedactor(mcpSecrets(config, options.env));
  // Keyed by session and request id as JSON: both are the client's, so no separator could be trusted.
  const running = new Map<string, AbortController>();
  const sessions = sessionStore(options.kv, {
    idleMs: config.mcp.session_idle_ms,
    now: options.now,
    writes: options.writes,
  });

  /** How the catalog lists a server: on the gateway's own session (an HTTP server's opened once and kept). */
  function catalogSource(server: McpServerConfig, link: Link): CatalogSource {
    const own = async (signal: AbortSignal): Promise<UpstreamSession> => {
      if (link.kind === "stdio") return await link.link.session(signal);
      link.own ??= link.link.open(signal);
      return await link.own.catch((err) => {
        link.own = undefined;
        throw err;
      });
    };
    let nextId = 0;
    const page = async (method: string, cursor: string | undefined, signal: AbortSignal, again = true) => {
      const request: RpcRequest = {
        jsonrpc: "2.0",
        id: `modelgate-list-${nextId++}`,
        method,
        ...cursor ? { params: { cursor } } : {},
      };
      let response: RpcResponse;
      try {
        const session = await own(signal);
        response = link.kind === "http"
          ? await link.link.send(request, { session, signal })
          : await link.link.send(request, { signal });
      } catch (err) {
        if (!(err instanceof SessionGone) || link.kind !== "http" || !again) throw err;
        link.own = undefined;
        return await page(method, cursor, signal, false);
      }
      if (response.error) throw new RpcError(response.error.code, response.error.message);
      return response.result ?? {};
    };
    return {
      capabilities: async (signal) => (await own(signal)).capabilities,
      page,
      listTimeoutMs: server.list_timeout_ms,
    };
  }

  /** The session `session` has with HTTP server `name`, opened now when it has none (or the server forgot it). */
  async function upstreamOf(
    name: string,
    link: HttpLink,
    session: ClientSession,
    signal: AbortSignal,
    gone?: UpstreamRef,
  ): Promise<UpstreamRef> {
    const known = session.upstream[name];
    if (known && known !== gone) return known;
    const opened = await link.open(signal);
    const ref: UpstreamRef = { version: opened.version, ...opened.id ? { id: opened.id } : {} };
    const kept = await sessions.setUpstream(session.id, name, ref, gone);
    // Another request of the same client opened one first: that one is used, and this one ended.
    if (kept && kept !== ref && kept.id !== ref.id) void link.end(opened, AbortSignal.timeout(5000));
    const inForce = kept ?? ref;
    session.upstream[name] = inForce;
    return inForce;
  }

  async function call(name: string, session: ClientSession, request: RpcRequest, call: CallOptions) {
    const server = configs.get(name);
    const link = links.get(name);
    if (!server || !link) throw new RpcError(CODES.invalidParams, `Unknown MCP server "${name}"`);
    const timer = AbortSignal.timeout(server.timeout_ms);
    const signal = AbortSignal.any([call.signal, timer]);
    // A list change is the gateway's to act on (its listings are asked again), not the client's: clients re-list.
    const onNotice = (notice: RpcNotification) => {
      if (/^notifications\/\w+\/list_changed$/.test(notice.method)) catalog.invalidate(name);
      else call.onNotice?.(notice);
    };
    let ref: UpstreamRef | undefined;
    try {
      if (link.kind === "stdio") {
        await link.link.session(signal);
        return await link.link.send(request, { signal, onNotice });
      }
      ref = await upstreamOf(name, link.link, session, signal);
      try {
        return await link.link.send(request, { session: ref, signal, onNotice });
      } catch (err) {
        if (!(err instanceof SessionGone)) throw err;
        ref = await upstreamOf(name, link.link, session, signal, ref);
        return await link.link.send(request, { session: ref, signal, onNotice });
      }
    } catch (err) {
      if (!signal.aborted) throw err;
      // Stopped waiting: the server is told, so it can stop working on it (an HTTP server would not know otherwise).
      if (link.kind === "http" && ref) {
        const cancelled: RpcNotification = {
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: request.id, reason: timer.aborted ? "timeout" : "cancelled" },
        };
        void link.link.notify(cancelled, { session: ref, signal: AbortSignal.timeout(5000) });
      }
      if (timer.aborted && !call.signal.aborted) throw timedOut(server);
      throw call.signal.reason ?? err;
    }
  }

  return {
    servers: config.mcp_servers,
    sessions,
    catalog,
    call,
    track(session, id, stop) {
      const key = JSON.stringify([session.id, id]);
      running.set(key, stop);
      return () => running.get(key) === stop && running.delete(key);
    },
    async cancel(session, notification) {
      const id = notification.params?.requestId;
      if (typeof id === "string" || typeof id === "number") running.get(JSON.stringify([session.id, id]))?.abort();
      await Promise.all(
        Object.entries(session.upstream).map(([name, ref]) => {
          const link = links.get(name);
          return link?.kind === "http"
            ? link.link.notify(notification, { session: ref, signal: AbortSignal.timeout(5000) })
            : undefined;
        }),
      );
    },
    async end(session) {
      await Promise.all(
        Object.entries(session.upstream).map(([name, ref]) => {
          const link = links.get(name);
          return link?.kind === "http" ? link.link.end(ref, AbortSignal.timeout(5000)) : undefined;
        }),
      );
    },
    views: () =>
      config.mcp_servers.map((server) => {
        const link = links.get(server.name)!;
        const view: ServerView = {
          name: server.name,
          transport: link.kind,
          health: catalog.health(server.name),
        };
        if (link.kind === "stdio") view.process = link.link.state();
        return view;
      }),
    redact: secretsRedactor.text,
    async close() {
      await Promise.all([...links.values()].map((link) => link.kind === "stdio" ? link.link.close() : undefined));
    },
  };
}

export type { ClientSession, JsonObject };
