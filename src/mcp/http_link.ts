/**
 * @module The gateway as a client of one Streamable HTTP server: opening a session (initialize, then initialized),
 * sending a request on it and reading the answer (JSON or SSE), notifications, and ending the session. The server's
 * URL and its headers' values never appear in an error: they may hold secrets.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { readAnswer } from "./answer.ts";
import { CODES, RpcError, type RpcNotification, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";

/** The protocol versions the gateway speaks to its servers, newest first; it asks for the first. */
export const UPSTREAM_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/** The gateway's name and version as a client of its servers. */
export const CLIENT_INFO = { name: "modelgate", version: "1.0.0" };

/** An open session with a server: its id (none for a server that keeps no sessions) and what it agreed to. */
export interface UpstreamSession {
  id?: string;
  version: string;
  capabilities: JsonObject;
}

/** The server no longer knows the session (it answered 404): the caller opens a new one. */
export class SessionGone extends Error {
  constructor() {
    super("The MCP server no longer knows this session");
    this.name = "SessionGone";
  }
}

/** How one request is sent. */
export interface SendOptions {
  session?: Pick<UpstreamSession, "id" | "version">;
  signal: AbortSignal;
  onNotice?(notice: RpcNotification): void;
}

/** One Streamable HTTP server as the gateway reaches it. */
export interface HttpLink {
  /** Opens a session: initialize with the gateway's (empty) client capabilities, then notifications/initialized. */
  open(signal: AbortSignal): Promise<UpstreamSession>;
  /** Sends a request and reads its response; throws {@linkcode SessionGone} when the server forgot the session. */
  send(request: RpcRequest, options: SendOptions): Promise<RpcResponse>;
  /** Sends a notification; failures are the server's to miss. */
  notify(notification: RpcNotification, options: SendOptions): Promise<void>;
  /** Ends a session (DELETE); a failure changes nothing for the client. */
  end(session: Pick<UpstreamSession, "id" | "version">, signal: AbortSignal): Promise<void>;
}

/** Options for {@linkcode httpLink}. */
export interface HttpLinkOptions {
  env(name: string): string | undefined;
  fetch: typeof fetch;
}

/** The headers the config names, with their values from the environment; the names of variables that are unset. */
export function configuredHeaders(config: McpServerConfig, env: (name: string) => string | undefined) {
  const headers: Record<string, string> = {};
  const missing: string[] = [];
  for (const [name, variable] of Object.entries(config.headers ?? {})) {
    const value = env(variable);
    if (value) headers[name] = value;
    else missing.push(variable);
  }
  return { headers, missing };
}

/** A link to the server at `config.url`. */
export function httpLink(config: McpServerConfig, io: HttpLinkOptions): HttpLink {
  const url = config.url!;
  const server = config.name;
  const { headers: own } = configuredHeaders(config, io.env);
  let nextId = 0;

  function headersFor(session: SendOptions["session"]): Headers {
    const headers = new Headers(own);
    headers.set("content-type", "application/json");
    headers.set("accept", "application/json, text/event-stream");
    if (session?.id) headers.set("mcp-session-id", session.id);
    if (session) headers.set("mcp-protocol-version", session.version);
    return headers;
  }

  async function post(body: unknown, options: SendOptions): Promise<Response> {
    let response: Response;
    try {
      response = await io.fetch(url, {
        method: "POST",
        headers: headersFor(options.session),
        body: JSON.stringify(body),
        signal: options.signal,
        // A redirect would take the server's credentials elsewhere: it is an error, never followed.
        redirect: "manual",
      });
    } catch (err) {
      if (options.signal.aborted) throw options.signal.reason ?? err;
      throw new RpcError(CODES.server, `MCP server "${server}" is unavailable: its connection failed`);
    }
    if (response.status === 404 && options.session?.id) {
      await response.body?.cancel();
      throw new SessionGone();
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new RpcError(CODES.server, `MCP server "${server}" answered HTTP ${response.status}`, {
        outcome: "upstream_error",
      });
    }
    return response;
  }

  async function send(request: RpcRequest, options: SendOptions): Promise<RpcResponse> {
    const response = await post(request, options);
    if (!response.body) throw new RpcError(CODES.server, `MCP server "${server}" answered with an empty body`);
    const sse = (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
    return await readAnswer(response.body, {
      id: request.id,
      sse,
      server,
      maxBytes: config.max_answer_bytes,
      handlers: {
        onNotice: options.onNotice,
        // The answer to the server's own request goes back on the same session, whenever it gets there.
        reply: (answer) =>
          void post(answer, { ...options, signal: AbortSignal.timeout(config.list_timeout_ms) })
            .then((r) => r.body?.cancel()).catch(() => {}),
      },
    });
  }

  return {
    async open(signal) {
      const request: RpcRequest = {
        jsonrpc: "2.0",
        id: `modelgate-init-${nextId++}`,
        method: "initialize",
        params: { protocolVersion: UPSTREAM_VERSIONS[0], capabilities: {}, clientInfo: CLIENT_INFO },
      };
      const response = await post(request, { signal });
      const id = response.headers.get("mcp-session-id") ?? undefined;
      const sse = (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
      const answer = await readAnswer(response.body!, {
        id: request.id,
        sse,
        server,
        maxBytes: config.max_answer_bytes,
        handlers: { reply: () => {} },
      });
      const result = answer.result;
      if (!result || !UPSTREAM_VERSIONS.includes(String(result.protocolVersion))) {
        throw new RpcError(CODES.server, `MCP server "${server}" refused to open a session`);
      }
      const session: UpstreamSession = {
        version: String(result.protocolVersion),
        capabilities: isObject(result.capabilities) ? result.capabilities : {},
      };
      if (id) session.id = id;
      await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { session, signal })).body?.cancel();
      return session;
    },
    send,
    async notify(notification, options) {
      try {
        await (await post(notification, options)).body?.cancel();
      } catch {
        // A notification has no answer to wait for; a server that misses it is not the client's concern.
      }
    },
    async end(session, signal) {
      if (!session.id) return;
      try {
        const response = await io.fetch(url, {
          method: "DELETE",
          headers: headersFor(session),
          signal,
          redirect: "manual",
        });
        await response.body?.cancel();
      } catch {
        // The server forgets the session on its own in the end.
      }
    },
  };
}
