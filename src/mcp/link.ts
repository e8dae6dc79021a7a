/**
 * @module One link interface for every MCP server the gateway reaches, whatever carries the messages (Streamable HTTP
 * or a stdio process), as the MCP SDK has one transport for both: open a session, send a request on it, end it, stop
 * the link; and what the gateway says of itself in every handshake.
 */
import type { JsonObject } from "../core/types.ts";
import type { RpcNotification, RpcRequest, RpcResponse } from "./jsonrpc.ts";
import type { LinkState } from "./stdio_lines.ts";

/** The protocol versions the gateway speaks to its servers, newest first; it asks for the first. */
export const UPSTREAM_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/** The gateway's name and version as a client of its servers. */
export const CLIENT_INFO = { name: "modelgate", version: "1.0.0" };

/** How long ending a session or telling a server of a cancellation may take: a server that does not answer forgets. */
export const FAREWELL_MS = 5000;

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
  /** The session it goes on; a shared link has one of its own and needs none. */
  session?: Pick<UpstreamSession, "id" | "version">;
  signal: AbortSignal;
  /** The call's time limit, part of `signal`: when it is what stopped the call, the server is told so. */
  deadline?: AbortSignal;
  onNotice?(notice: RpcNotification): void;
}

/** One MCP server as the gateway reaches it. */
export interface McpLink {
  /** What carries the messages, as the console names it. */
  readonly transport: "http" | "stdio";
  /**
   * True when every client session shares the link's one session (a stdio process's); false when each opens one of
   * its own at its first call (an HTTP server's), which the client's session record keeps.
   */
  readonly shared: boolean;
  /** A session: initialize, then notifications/initialized; a shared link's own, started now when it is not up. */
  open(signal: AbortSignal): Promise<UpstreamSession>;
  /**
   * Sends a request and reads its response; a request stopped before its answer is cancelled with the server. Throws
   * {@linkcode SessionGone} when the server forgot the session, else an RpcError a client can be told.
   */
  send(request: RpcRequest, options: SendOptions): Promise<RpcResponse>;
  /** Ends a session; a failure changes nothing for the client, and a shared session ends only with its process. */
  end(session: Pick<UpstreamSession, "id" | "version">, signal: AbortSignal): Promise<void>;
  /** The process's state, for a link that runs one. */
  state(): LinkState | undefined;
  /** Stops what the link runs (a stdio server's process and its restarts). */
  close(): Promise<void>;
}
