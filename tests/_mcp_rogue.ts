/**
 * @module Misbehaving MCP servers for the tests of the gateway's bounds, and a gateway in front of any servers a test
 * configures: a raw Streamable HTTP server on 127.0.0.1 port 0 whose answers the test writes (what the official SDK's
 * server would never send), and the command of the raw stdio server in ./_mcp_rogue_stdio.ts.
 */
import { startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** What a raw server answers `initialize` with unless the test says otherwise. */
export const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "rogue", version: "1" },
};

/** A JSON-RPC message as the raw server got it. */
export interface Got {
  method?: string;
  id?: string | number;
  params?: Record<string, unknown>;
  /** The `mcp-session-id` it came with. */
  session?: string;
}

/** A raw server: every message it got, in order, and the sessions a client ended (DELETE). */
export interface RawMcpServer extends AsyncDisposable {
  url: string;
  got: Got[];
  ended: string[];
}

/**
 * Starts a raw server: `answer` gives the reply to each request (a JSON-RPC response to send as JSON, or a whole
 * Response), undefined for the default (the initialize result above, with a session id; an empty tool list; Method
 * not found otherwise). Notifications get 202, DELETE 200.
 */
export function startRawMcpServer(answer: (message: Got) => unknown = () => undefined): RawMcpServer {
  const got: Got[] = [];
  const ended: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const session = req.headers.get("mcp-session-id") ?? undefined;
    if (req.method === "DELETE" && session) ended.push(session);
    if (req.method !== "POST") return new Response(null, { status: 200 });
    const message = { ...await req.json(), ...session ? { session } : {} } as Got;
    got.push(message);
    if (message.id === undefined) return new Response(null, { status: 202 });
    const given = await answer(message);
    if (given instanceof Response) return given;
    const fallback = message.method === "initialize"
      ? { result: INIT_RESULT }
      : message.method === "tools/list"
      ? { result: { tools: [] } }
      : { error: { code: -32601, message: "Method not found" } };
    return Response.json(given ?? { jsonrpc: "2.0", id: message.id, ...fallback }, {
      headers: message.method === "initialize" ? { "mcp-session-id": "rogue-session" } : {},
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    got,
    ended,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** The raw stdio server's command line, misbehaving as `mode` says (see ./_mcp_rogue_stdio.ts). */
export function rogueStdioCommand(mode: "exit" | "lines" | "chatty"): string[] {
  const script = new URL("./_mcp_rogue_stdio.ts", import.meta.url).pathname;
  return [Deno.execPath(), "run", "--quiet", "--no-prompt", "--allow-env", script, mode];
}

/** A gateway whose `mcp_servers` are `servers` (YAML list items), and a token of a group granted all of them. */
export async function gatewayFor(
  servers: string,
  options: StartOptions & { settings?: string } = {},
): Promise<{ gateway: TestGateway; token: string } & AsyncDisposable> {
  const names = [...servers.matchAll(/name: ([a-z0-9-]+)/g)].map((match) => match[1]);
  const grant = names.map((name) => `${name}: "*"`).join(", ");
  const gateway = await startGateway("http://127.0.0.1:9", {
    ...options,
    extraYaml: `mcp_servers:\n${servers}\n${options.settings ? `mcp: { ${options.settings} }\n` : ""}${
      options.extraYaml ?? ""
    }`,
    extraGroups: `  - { name: granted, listing: anthropic, models: [claude-test], mcp: { ${grant} } }\n${
      options.extraGroups ?? ""
    }`,
  });
  const token = (await gateway.store.createToken({ group: "granted" })).secret;
  return { gateway, token, [Symbol.asyncDispose]: () => gateway[Symbol.asyncDispose]() };
}

/**
 * What `read` gives once it is not undefined: for what another process or a server does in its own time (a restart, a
 * notification sent after the answer), checked every 10 ms; throws naming `what` after `ms`.
 */
export async function eventually<T>(what: string, read: () => T | undefined, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Gave up after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
