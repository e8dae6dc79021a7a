/**
 * @module The gateway's MCP servers, built from `mcp_servers`: a link to each (HTTP or stdio), the catalog of what they
 * offer, the clients' sessions, and one call on a server for a client session within the server's time limit. Every
 * server is reached through one link interface (link.ts). An HTTP server gets a session of its own per client session,
 * opened at its first call, kept in the client's record and ended when the client's session ends, is evicted or
 * expires; a stdio server's link is shared: one process, one session for all. Nothing is
 * started or opened before it is first needed.
 */
import type { Config, McpServerConfig } from "../core/config.ts";
import type { KvWriter } from "../core/kv_write.ts";
import { textRedactor } from "../core/redact.ts";
import type { JsonObject } from "../core/types.ts";
import { type Catalog, type CatalogSource, createCatalog, type Health } from "./catalog.ts";
import { catalogSource } from "./catalog_source.ts";
import { httpLink } from "./http_link.ts";
import { CODES, RpcError, type RpcNotification, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";
import {
  type ClientSession,
  type EndedSession,
  type SessionStore,
  sessionStore,
  type UpstreamRef,
} from "./sessions.ts";
import { FAREWELL_MS, type McpLink, SessionGone, type UpstreamSession } from "./link.ts";
import { mcpSecrets } from "./secrets.ts";
import { type LinkState, stdioLink } from "./stdio_link.ts";

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
  transport: McpLink["transport"];
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
  /** Opens a client session for a token; the token's oldest ends when it has its most already. */
  open(tokenId: string, version: string): Promise<ClientSession>;
  /** Remembers a call running here, so a cancellation that reaches this instance stops it; returns the forgetting. */
  track(session: ClientSession, id: RpcRequest["id"], stop: AbortController): () => void;
  /**
   * Stops the named call when it runs here, which tells its server (and only it); a cancellation of any other id is
   * dropped. True when it stopped one.
   */
  cancel(session: ClientSession, notification: RpcNotification): boolean;
  /** Ends the sessions a client session opened with servers. */
  end(session: EndedSession): Promise<void>;
  /** Ends the servers' sessions of client sessions that expired (a timer does it every 10 s); how many it ended. */
  sweep(): Promise<number>;
  views(): ServerView[];
  /** What carries the messages of the named server, as traces and the console name it. */
  transport(server: string): McpLink["transport"] | undefined;
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

/** How often an instance looks for expired sessions, and how many it takes at a time. */
const SWEEP_MS = 10_000;
const SWEEP_BATCH = 100;

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
  const links = new Map<string, McpLink>();
  const sources = new Map<string, CatalogSource>();
  const invalidate = (name: string) => () => catalog.invalidate(name);
  for (const server of config.mcp_servers) {
    const link = server.url
      ? httpLink(server, options)
      : stdioLink(server, { ...options, onListChanged: invalidate(server.name) });
    links.set(server.name, link);
    sources.set(server.name, catalogSource(server, link));
  }
  const catalog = createCatalog(sources, {
    now: options.now,
    ttlMs: config.mcp.list_ttl_ms,
    maxLength: config.mcp.name_max_length,
    closing: options.closing,
    log: options.log,
  });
  const secretsRedactor = textRedactor(mcpSecrets(config, options.env));
  // Keyed by session and request id as JSON: both are the client's, so no separator could be trusted.
  const calls = new Map<string, AbortController>();
  const sessions = sessionStore(options.kv, {
    idleMs: config.mcp.session_idle_ms,
    maxPerToken: config.mcp.max_sessions_per_token,
    now: options.now,
    writes: options.writes,
  });

  async function end(session: EndedSession): Promise<void> {
    await Promise.all(
      Object.entries(session.upstream).map(([name, ref]) =>
        links.get(name)?.end(ref, AbortSignal.timeout(FAREWELL_MS))
      ),
    );
  }

  async function sweep(): Promise<number> {
    const expired = await sessions.expired(SWEEP_BATCH);
    await Promise.all(expired.map(end));
    return expired.length;
  }
  // A sweep that fails (KV closing, busy) is the next one's to do again.
  const sweeper = setInterval(() => void sweep().catch(() => {}), SWEEP_MS);
  Deno.unrefTimer(sweeper);

  /**
   * The session `session` has with server `name`: a shared link's own, else the client session's, opened now when it
   * has none (or the server forgot it, `gone`).
   */
  async function upstreamOf(
    name: string,
    link: McpLink,
    session: ClientSession,
    signal: AbortSignal,
    gone?: UpstreamRef,
  ): Promise<UpstreamRef> {
    if (link.shared) return await link.open(signal);
    const known = session.upstream[name];
    if (known && known !== gone) return known;
    const opened: UpstreamSession = await link.open(signal);
    const ref: UpstreamRef = { version: opened.version, ...opened.id ? { id: opened.id } : {} };
    const kept = await sessions.setUpstream(session.id, name, ref, gone);
    // Another request of the same client opened one first: that one is used, and this one ended. A client session that
    // ended meanwhile keeps none.
    if (kept?.id !== ref.id || kept === null) await link.end(opened, AbortSignal.timeout(FAREWELL_MS));
    if (kept === null) throw new RpcError(CODES.sessionNotFound, "Session not found: it ended during this call");
    session.upstream[name] = kept;
    return kept;
  }

  async function call(name: string, session: ClientSession, request: RpcRequest, call: CallOptions) {
    const server = configs.get(name);
    const link = links.get(name);
    if (!server || !link) throw new RpcError(CODES.invalidParams, `Unknown MCP server "${name}"`);
    const deadline = AbortSignal.timeout(server.timeout_ms);
    const signal = AbortSignal.any([call.signal, deadline]);
    // A list change is the gateway's to act on (its listings are asked again), not the client's: clients re-list.
    const onNotice = (notice: RpcNotification) => {
      if (/^notifications\/\w+\/list_changed$/.test(notice.method)) catalog.invalidate(name);
      else call.onNotice?.(notice);
    };
    const send = (ref: UpstreamRef) => link.send(request, { session: ref, signal, deadline, onNotice });
    try {
      const ref = await upstreamOf(name, link, session, signal);
      try {
        return await send(ref);
      } catch (err) {
        if (!(err instanceof SessionGone)) throw err;
        return await send(await upstreamOf(name, link, session, signal, ref));
      }
    } catch (err) {
      if (!signal.aborted) throw err;
      if (deadline.aborted && !call.signal.aborted) throw timedOut(server);
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
      calls.set(key, stop);
      return () => calls.get(key) === stop && calls.delete(key);
    },
    cancel(session, notification) {
      const id = notification.params?.requestId;
      const running = typeof id === "string" || typeof id === "number"
        ? calls.get(JSON.stringify([session.id, id]))
        : undefined;
      running?.abort();
      return running !== undefined;
    },
    async open(tokenId, version) {
      const { session, evicted } = await sessions.create(tokenId, version);
      await Promise.all(evicted.map(end));
      return session;
    },
    end,
    sweep,
    views: () =>
      config.mcp_servers.map((server) => {
        const link = links.get(server.name)!;
        const process = link.state();
        return {
          name: server.name,
          transport: link.transport,
          health: catalog.health(server.name),
          ...process ? { process } : {},
        };
      }),
    transport: (name) => links.get(name)?.transport,
    redact: secretsRedactor.text,
    async close() {
      clearInterval(sweeper);
      await Promise.all([...links.values()].map((link) => link.close()));
    },
  };
}

export type { ClientSession, JsonObject };
