/**
 * @module One stdio server the gateway runs: started with only the environment its config names, one JSON-RPC message
 * a line each way, requests of all clients on one process told apart by ids (and progress tokens) of the gateway's own,
 * lines past the answer bound dropped, and the process started again with backoff when it exits.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { dispatch, parseMessage, tooLarge } from "./answer.ts";
import { CLIENT_INFO, type McpLink, type SendOptions, UPSTREAM_VERSIONS, type UpstreamSession } from "./link.ts";
import {
  CODES,
  RpcError,
  type RpcId,
  type RpcMessage,
  type RpcNotification,
  type RpcRequest,
  type RpcResponse,
} from "./jsonrpc.ts";
import { backoffMs, lineSplitter, type LinkState } from "./stdio_lines.ts";

/** What the gateway needs of the process it runs. */
export interface StdioLinkOptions {
  env(name: string): string | undefined;
  log(line: Record<string, unknown>): void;
  now(): number;
  /** Told when the server says a list of its changed, so listings are asked again. */
  onListChanged?(): void;
}

/** A request on its way: whose it is, under the gateway's id. */
interface Pending {
  resolve(response: RpcResponse): void;
  reject(err: unknown): void;
  clientId: RpcId;
  onNotice?(notice: RpcNotification): void;
  /** The client's progress token, sent under a token of the gateway's. */
  progress?: { ours: string; theirs: RpcId };
}

/** The environment a server starts with: exactly the variables its config names, valued from the gateway's. */
export function serverEnvironment(config: McpServerConfig, env: (name: string) => string | undefined) {
  const out: Record<string, string> = {};
  for (const [name, variable] of Object.entries(config.env ?? {})) {
    const value = env(variable);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The link to the stdio server of `config`; it starts the process on first use. */
export function stdioLink(config: McpServerConfig, options: StdioLinkOptions): McpLink {
  const server = config.name;
  const encoder = new TextEncoder();
  const pending = new Map<number, Pending>();
  const progress = new Map<string, number>();
  let nextId = 1;
  let child: Deno.ChildProcess | undefined;
  let writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  let starting: Promise<UpstreamSession> | undefined;
  let session: UpstreamSession | undefined;
  let state: LinkState = { state: "idle", restarts: 0 };
  let failures = 0;
  /** When the process running (or the last one) was started. */
  let startedAt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  /** Why the last start failed, when it did: what the state says rather than the exit that followed. */
  let startError: string | undefined;

  function write(message: RpcMessage): void {
    // Writes queue on the one writer in order; a process that went away fails the request that wrote, not the gateway.
    writer?.write(encoder.encode(`${JSON.stringify(message)}\n`)).catch(() => {});
  }

  function receive(message: RpcMessage): void {
    if (!("method" in message) && typeof message.id === "number") {
      const call = pending.get(message.id);
      if (!call) return;
      pending.delete(message.id);
      if (call.progress) progress.delete(call.progress.ours);
      call.resolve({ ...message, id: call.clientId });
      return;
    }
    dispatch(message, -1, {
      reply: (answer) => write(answer),
      onNotice: (notice) => {
        if (/^notifications\/\w+\/list_changed$/.test(notice.method)) options.onListChanged?.();
        const token = notice.method === "notifications/progress" ? notice.params?.progressToken : undefined;
        const call = typeof token === "string" ? pending.get(progress.get(token) ?? -1) : undefined;
        if (call?.progress) {
          call.onNotice?.({ ...notice, params: { ...notice.params, progressToken: call.progress.theirs } });
        }
      },
    });
  }

  /**
   * A line too large to take: its request fails, the rest go on. Its id is the top-level one, which a serializer
   * writes first (after `jsonrpc`) or last; the gateway's ids are numbers.
   */
  function oversized(head: string, tail: string): void {
    const id = /^\s*\{(?:\s*"jsonrpc"\s*:\s*"2\.0"\s*,)?\s*"id"\s*:\s*(\d+)/.exec(head)?.[1] ??
      /"id"\s*:\s*(\d+)\s*\}\s*$/.exec(tail)?.[1];
    const call = id === undefined ? undefined : pending.get(Number(id));
    if (!call) return;
    pending.delete(Number(id));
    call.reject(tooLarge(server, config.max_answer_bytes));
  }

  async function read(stream: ReadableStream<Uint8Array>): Promise<void> {
    const split = lineSplitter(config.max_answer_bytes);
    try {
      for await (const chunk of stream) {
        for (const line of split.push(chunk)) {
          if (line.tooLarge) oversized(line.text, line.tail ?? "");
          else {
            const message = parseMessage(line.text);
            if (message) receive(message);
          }
        }
      }
    } catch {
      // The process is gone; its exit is handled where its status arrives.
    }
  }

  async function drainErrors(stream: ReadableStream<Uint8Array>): Promise<void> {
    const split = lineSplitter(4096);
    try {
      for await (const chunk of stream) {
        // What a server prints for people may hold anything: it is logged only at debug level, cut short.
        for (const line of split.push(chunk)) {
          options.log({ level: "debug", event: "mcp_server_stderr", server, text: line.text.slice(0, 500) });
        }
      }
    } catch {
      // As for stdout.
    }
  }

  function exited(code: number): void {
    child = undefined;
    writer = undefined;
    session = undefined;
    const gone = new RpcError(CODES.server, `MCP server "${server}" exited (code ${code})`);
    for (const call of pending.values()) call.reject(gone);
    pending.clear();
    progress.clear();
    if (closed) return;
    // A server that ran for a while before it exited starts over at once; one that keeps exiting (before its handshake
    // too) waits longer each time: the run is counted from its start.
    failures = options.now() - startedAt > 30_000 ? 1 : failures + 1;
    const delay = backoffMs(failures);
    const retryAt = options.now() + delay;
    const error = startError ?? `exited with code ${code}`;
    startError = undefined;
    state = { state: "down", error, since: options.now(), restarts: state.restarts, retry_at: retryAt };
    options.log({ level: "warn", event: "mcp_server_exited", server, code, restart_in_ms: delay });
    timer = setTimeout(() => void start().catch(() => {}), delay);
    Deno.unrefTimer(timer);
  }

  async function handshake(signal: AbortSignal): Promise<UpstreamSession> {
    const response = await send({
      jsonrpc: "2.0",
      id: "modelgate-init",
      method: "initialize",
      params: { protocolVersion: UPSTREAM_VERSIONS[0], capabilities: {}, clientInfo: CLIENT_INFO },
    }, { signal });
    const result = response.result;
    if (!result || !UPSTREAM_VERSIONS.includes(String(result.protocolVersion))) {
      throw new RpcError(CODES.server, `MCP server "${server}" refused to start a session`);
    }
    write({ jsonrpc: "2.0", method: "notifications/initialized" });
    return {
      version: String(result.protocolVersion),
      capabilities: isObject(result.capabilities) ? result.capabilities as JsonObject : {},
    };
  }

  function start(): Promise<UpstreamSession> {
    clearTimeout(timer);
    starting ??= (async () => {
      const restart = state.state !== "idle";
      state = { ...state, state: "starting", restarts: state.restarts + (restart ? 1 : 0) };
      startedAt = options.now();
      let process: Deno.ChildProcess | undefined;
      try {
        const [program, ...args] = config.command!;
        process = new Deno.Command(program, {
          args,
          cwd: config.cwd,
          env: serverEnvironment(config, options.env),
          clearEnv: true,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        child = process;
        writer = process.stdin.getWriter();
        void read(process.stdout);
        void drainErrors(process.stderr);
        const started = process;
        void started.status.then((status) => exited(status.code));
        session = await handshake(AbortSignal.timeout(config.list_timeout_ms));
        state = { state: "up", since: options.now(), restarts: state.restarts };
        return session;
      } catch (err) {
        const message = err instanceof RpcError ? err.message : `cannot start: ${(err as Error)?.name ?? "error"}`;
        // One exit per start: a process that never ran is gone now; one still running is stopped, and its exit says
        // why; one that exited already has been handled.
        if (!process) {
          startError = message;
          exited(-1);
        } else if (child === process) {
          startError = message;
          process.kill("SIGKILL");
        }
        throw new RpcError(CODES.server, `MCP server "${server}" is unavailable: ${message}`);
      } finally {
        starting = undefined;
      }
    })();
    return starting;
  }

  function send(request: RpcRequest, call: Pick<SendOptions, "signal" | "onNotice">): Promise<RpcResponse> {
    if (!writer) return Promise.reject(new RpcError(CODES.server, `MCP server "${server}" is not running`));
    const id = nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<RpcResponse>();
    const entry: Pending = { resolve, reject, clientId: request.id, onNotice: call.onNotice };
    const params = { ...request.params };
    const meta = isObject(params._meta) ? params._meta : undefined;
    const token = meta?.progressToken;
    if (typeof token === "string" || typeof token === "number") {
      entry.progress = { ours: `p${id}`, theirs: token };
      progress.set(entry.progress.ours, id);
      params._meta = { ...meta, progressToken: entry.progress.ours };
    }
    pending.set(id, entry);
    const abort = () => {
      if (!pending.delete(id)) return;
      if (entry.progress) progress.delete(entry.progress.ours);
      write({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id, reason: "cancelled" } });
      reject(call.signal.reason);
    };
    if (call.signal.aborted) abort();
    else call.signal.addEventListener("abort", abort, { once: true });
    write({ ...request, id, params });
    return promise.finally(() => call.signal.removeEventListener("abort", abort));
  }

  return {
    transport: "stdio",
    shared: true,
    open(signal) {
      if (session) return Promise.resolve(session);
      if (state.state === "down" && state.retry_at !== undefined && options.now() < state.retry_at && !starting) {
        const wait = Math.ceil((state.retry_at - options.now()) / 1000);
        return Promise.reject(
          new RpcError(CODES.server, `MCP server "${server}" is unavailable: it is restarted in ${wait} s`),
        );
      }
      const { promise, reject } = Promise.withResolvers<UpstreamSession>();
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      return Promise.race([start(), promise]);
    },
    send,
    // The one session lasts as long as the process.
    end: () => Promise.resolve(),
    state: () => ({ ...state }),
    async close() {
      closed = true;
      clearTimeout(timer);
      const process = child;
      if (!process) return;
      await writer?.close().catch(() => {});
      try {
        process.kill("SIGTERM");
      } catch {
        // It has just exited.
      }
      await process.status;
    },
  };
}

export type { LinkState };
