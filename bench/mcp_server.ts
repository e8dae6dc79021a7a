/**
 * @module The MCP bench's server: the official SDK's McpServer over Streamable HTTP (its sessions, its SSE answers),
 * with one tool, `echo`, that answers at once, on 127.0.0.1 port 0. Direct calls and the gateway's reach it alike.
 */
import { z } from "zod";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();

/** A new session's transport, with the server behind it. */
async function newSession(): Promise<WebStandardStreamableHTTPServerTransport> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    onsessioninitialized: (id) => void transports.set(id, transport),
  });
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool("echo", { description: "Echoes its text", inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  await server.connect(transport);
  return transport;
}

Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(JSON.stringify({ listening: port })) },
  async (req) => {
    const id = req.headers.get("mcp-session-id");
    const transport = id ? transports.get(id) : await newSession();
    if (!transport) return new Response("unknown session", { status: 404 });
    return await transport.handleRequest(req);
  },
);
