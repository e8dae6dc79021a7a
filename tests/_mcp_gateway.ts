/**
 * @module A gateway in front of the test MCP servers (./_mcp_servers.ts), and the official SDK's client connected to
 * its /mcp with a token: the set-up the MCP tests share.
 */
import { Client, StreamableHTTPClientTransport } from "./_mcp_sdk.ts";
import { type FakeMcpServer, LONG_TOOL, startMcpHttpServer, stdioCommand } from "./_mcp_servers.ts";
import { deadlineFetch, readText, startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** What the docs server's calls must carry: the gateway's own credential for it, from the environment. */
export const DOCS_AUTH = "Bearer docs-upstream-secret";

/** The groups of the MCP tests: `tools` with a grant of some things, `all` with everything, `default` with none. */
export const MCP_GROUPS = `
  - name: tools
    listing: anthropic
    models: [claude-test]
    mcp:
      docs:
        tools: [search, progress, ask, slow, link, fail, ${LONG_TOOL}]
        prompts: [greet]
        resources: ["docs://readme", "docs://pages/*"]
      local: "*"
  - { name: all, listing: anthropic, models: [claude-test], mcp: { docs: "*", local: "*" } }
  - { name: searchers, listing: anthropic, models: [claude-test], mcp: { docs: [search] } }
`;

/** The `mcp_servers` section for the docs server at `docsUrl` and the stdio server; `extra` is added to each entry. */
export function mcpServersYaml(docsUrl: string, extra = ""): string {
  return `
mcp_servers:
  - name: docs
    url: ${docsUrl}
    headers: { Authorization: DOCS_AUTH }
    list_timeout_ms: 2000
    timeout_ms: 3000${extra}
  - name: local
    command: ${JSON.stringify(stdioCommand())}
    env: { HOME: HOME, GREETING: GREETING, DENO_DIR: DENO_DIR }
    list_timeout_ms: 20000
    timeout_ms: 20000${extra}
`;
}

/**
 * The environment of the MCP test gateway: the docs credential, and what the stdio server is given (its Deno finds the
 * module cache under HOME, or in DENO_DIR when the tests run with one).
 */
export function mcpEnv(): Record<string, string> {
  const denoDir = Deno.env.get("DENO_DIR");
  return {
    DOCS_AUTH,
    HOME: Deno.env.get("HOME") ?? "/root",
    GREETING: "hello",
    MODELGATE_SECRET_OF_ITS_OWN: "sk-own",
    ...denoDir ? { DENO_DIR: denoDir } : {},
  };
}

/** The test MCP gateway: the docs server, the gateway, and a token per MCP group. */
export interface McpGateway extends AsyncDisposable {
  docs: FakeMcpServer;
  gateway: TestGateway;
  tokens: Record<"tools" | "all" | "searchers" | "none", string>;
  /** An SDK client connected to the gateway's /mcp with `token`. */
  connect(token: string): Promise<McpClient>;
}

/** The SDK's client on its Streamable HTTP transport, which knows the session it is on (until the client is closed). */
export type McpClient = Client & { transport: StreamableHTTPClientTransport };

/**
 * The official SDK's client connected to the /mcp of the gateway at `url` with `token`; with `sessionId`, it goes on
 * with that session rather than opening one. Its transport's `sessionId` is the session it is on.
 */
export async function connectMcp(
  url: string,
  token: string,
  { sessionId }: { sessionId?: string } = {},
): Promise<McpClient> {
  const client = new Client({ name: "test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: deadlineFetch(),
    sessionId,
  });
  await client.connect(transport);
  return client as McpClient;
}

/** The text of a tool result's first content item ("" when it has none). */
export function textOf(result: unknown): string {
  return (result as { content: { text?: string }[] }).content[0]?.text ?? "";
}

/**
 * A raw POST of `body` (JSON, or a string sent as it is) to the /mcp of the gateway at `url`, accepting JSON and an
 * event stream, with `headers` added; its status, headers and body (undefined when empty).
 */
export async function postMcp(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await readText(res);
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/**
 * Starts the docs server and a gateway in front of it and the stdio server; its models' upstreams are at `upstreamUrl`,
 * nowhere unless given.
 */
export async function startMcpGateway(
  options: StartOptions & { serverYaml?: string; upstreamUrl?: string } = {},
): Promise<McpGateway> {
  const docs = startMcpHttpServer();
  const gateway = await startGateway(options.upstreamUrl ?? "http://127.0.0.1:9", {
    ...options,
    extraYaml: `${mcpServersYaml(docs.url, options.serverYaml)}${options.extraYaml ?? ""}`,
    extraGroups: `${MCP_GROUPS}${options.extraGroups ?? ""}`,
    env: { ...mcpEnv(), ...options.env },
  });
  const tokens = {
    tools: (await gateway.store.createToken({ group: "tools" })).secret,
    all: (await gateway.store.createToken({ group: "all" })).secret,
    searchers: (await gateway.store.createToken({ group: "searchers" })).secret,
    none: gateway.tokens.default,
  };
  const clients: Client[] = [];
  return {
    docs,
    gateway,
    tokens,
    async connect(token) {
      const client = await connectMcp(gateway.url, token);
      clients.push(client);
      return client;
    },
    async [Symbol.asyncDispose]() {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await gateway[Symbol.asyncDispose]();
      await docs[Symbol.asyncDispose]();
    },
  };
}
