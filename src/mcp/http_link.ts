/**
 * @module The gateway as a client of one Streamable HTTP server: opening a session (initialize, then initialized),
 * sending a request on it and reading the answer (JSON or SSE), telling the server of a request stopped midway, and
 * ending the session. The server's
 * URL and its headers' values never appear in an error: they may hold secrets.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import { isObject } from "../core/types.ts";
import { readAnswer } from "./answer.ts";
import { CODES, RpcError, type RpcNotification, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";
import {
  CLIENT_INFO,
  FAREWELL_MS,
  type McpLink,
  type SendOptions,
  SessionGone,
  UPSTREAM_VERSIONS,
  type UpstreamSession,
} from "./link.ts";

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
export function httpLink(config: McpServerConfig, io: HttpLinkOptions): McpLink {
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
    try {
      return await answer(request, options);
    } catch (err) {
      // Stopped waiting: the server is told, so it can stop working on it (an HTTP server would not know otherwise).
      if (options.signal.aborted && options.session) {
        const reason = options.deadline?.aborted ? "timeout" : "cancelled";
        void notify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: request.id, reason } }, {
          session: options.session,
          signal: AbortSignal.timeout(FAREWELL_MS),
        });
      }
      throw err;
    }
  }

  async function answer(request: RpcRequest, options: SendOptions): Promise<RpcResponse> {
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

  async function notify(notification: RpcNotification, options: SendOptions): Promise<void> {
    try {
      await (await post(notification, options)).body?.cancel();
    } catch {
      // A notification has no answer to wait for; a server that misses it is not the client's concern.
    }
  }

  return {
    transport: "http",
    shared: false,
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
    state: () => undefined,
    close: () => Promise.resolve(),
  };
}
