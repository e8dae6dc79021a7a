/**
 * @module MCP servers for the tests, made with the official SDK: one over Streamable HTTP on 127.0.0.1 port 0 that
 * records every request and notification it gets (so a test can see a refused call never reached it) and can be made to
 * fail, serving the docs server's tools or those a test gives it, and the command line of the stdio server in
 * ./_mcp_stdio_server.ts.
 */
import { z } from "zod";
import {
  ElicitResultSchema,
  McpServer,
  ResourceTemplate,
  WebStandardStreamableHTTPServerTransport,
} from "./_mcp_sdk.ts";

/** The long tool name of the HTTP server: too long for Claude Code once prefixed. */
export const LONG_TOOL = "summarize_the_whole_knowledge_base_with_every_detail_included";

/** A test server over Streamable HTTP. */
export interface FakeMcpServer extends AsyncDisposable {
  url: string;
  /** Every request it got: the method, and the tool, prompt or URI it named (`tools/call search`). */
  seen: string[];
  /** Every notification it got, as sent (`notifications/cancelled` with its `requestId`, ...). */
  notices: { method: string; params?: Record<string, unknown> }[];
  /** The headers of every HTTP request it got. */
  headers: Headers[];
  /** Sessions it opened, and those a client ended with DELETE. */
  sessions: { opened: number; deleted: number };
  /** `down` answers 503 to everything; `hang` never answers; `redirect` sends every request elsewhere. */
  mode: "ok" | "down" | "hang" | "redirect";
  /** Forgets every session, as a restarted server would. */
  forgetSessions(): void;
}

/** The docs server behind one session: its tools, prompts and resources. */
export function docsServer(seen: string[]): McpServer {
  const server = new McpServer({ name: "docs", version: "1.0.0" });
  const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
  server.registerTool("search", { description: "Search the docs", inputSchema: { query: z.string() } }, ({ query }) => {
    seen.push("tools/call search");
    return text(`found: ${query}`);
  });
  server.registerTool("secret", { description: "Not for everyone" }, () => {
    seen.push("tools/call secret");
    return text("the secret");
  });
  // A hostile server: it quotes the credential the gateway sends it, in its listing and in its answers.
  server.registerTool("leak", { description: "Knows docs-upstream-secret" }, () => {
    seen.push("tools/call leak");
    return text("the key is docs-upstream-secret, sent as Bearer docs-upstream-secret");
  });
  server.registerTool("fail", { description: "Always fails" }, () => {
    seen.push("tools/call fail");
    return { ...text("it failed"), isError: true };
  });
  server.registerTool(LONG_TOOL, { description: "A tool with a long name" }, () => {
    seen.push(`tools/call ${LONG_TOOL}`);
    return text("summary");
  });
  server.registerTool("big", { description: "Answers n bytes", inputSchema: { bytes: z.number() } }, ({ bytes }) => {
    seen.push("tools/call big");
    return text("y".repeat(bytes));
  });
  server.registerTool("link", { description: "Links the readme" }, () => {
    seen.push("tools/call link");
    return { content: [{ type: "resource_link" as const, uri: "docs://readme", name: "readme" }] };
  });
  server.registerTool("progress", { description: "Reports progress twice", inputSchema: {} }, async (_args, extra) => {
    seen.push("tools/call progress");
    const token = extra._meta?.progressToken;
    for (const step of [1, 2]) {
      if (token === undefined) break;
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: step, total: 2 },
      });
    }
    return text("done");
  });
  server.registerTool("ask", { description: "Asks the person", inputSchema: {} }, async (_args, extra) => {
    seen.push("tools/call ask");
    try {
      await extra.sendRequest(
        {
          method: "elicitation/create",
          params: { message: "Sure?", requestedSchema: { type: "object", properties: {} } },
        },
        ElicitResultSchema,
      );
      return text("asked");
    } catch (err) {
      return text(`not asked: ${(err as Error).message}`);
    }
  });
  server.registerTool(
    "slow",
    { description: "Answers after ms", inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      seen.push("tools/call slow");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        extra.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
      if (extra.signal.aborted) seen.push("cancelled slow");
      return text(extra.signal.aborted ? "cancelled" : "slept");
    },
  );
  server.registerPrompt("greet", { description: "Greets", argsSchema: { name: z.string() } }, ({ name }) => {
    seen.push("prompts/get greet");
    return { messages: [{ role: "user" as const, content: { type: "text" as const, text: `Hello ${name}` } }] };
  });
  server.registerPrompt("hidden", { description: "Not for everyone" }, () => {
    seen.push("prompts/get hidden");
    return { messages: [{ role: "user" as const, content: { type: "text" as const, text: "hidden" } }] };
  });
  server.registerResource("readme", "docs://readme", { mimeType: "text/plain" }, (uri) => {
    seen.push(`resources/read ${uri.href}`);
    return { contents: [{ uri: uri.href, text: "# Readme" }] };
  });
  server.registerResource("secret", "docs://secret", { mimeType: "text/plain" }, (uri) => {
    seen.push(`resources/read ${uri.href}`);
    return { contents: [{ uri: uri.href, text: "secret" }] };
  });
  server.registerResource("page", new ResourceTemplate("docs://pages/{page}", { list: undefined }), {}, (uri) => {
    seen.push(`resources/read ${uri.href}`);
    return { contents: [{ uri: uri.href, text: `page ${uri.pathname}` }] };
  });
  return server;
}

/**
 * Starts the HTTP test server; its sessions live in it, as the SDK keeps them, each on a server `build` makes (the docs
 * server's tools unless given).
 */
export function startMcpHttpServer(build: (seen: string[]) => McpServer = docsServer): FakeMcpServer {
  const seen: string[] = [];
  const notices: FakeMcpServer["notices"] = [];
  const headers: Headers[] = [];
  const counts = { opened: 0, deleted: 0 };
  let transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const state = { mode: "ok" as FakeMcpServer["mode"] };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    headers.push(req.headers);
    if (state.mode === "down") return new Response("down", { status: 503 });
    if (state.mode === "redirect") return Response.redirect("http://127.0.0.1:9/elsewhere", 307);
    if (state.mode === "hang") await new Promise((resolve) => req.signal.addEventListener("abort", resolve));
    const id = req.headers.get("mcp-session-id");
    if (req.method === "DELETE" && id && transports.has(id)) counts.deleted++;
    let transport = id ? transports.get(id) : undefined;
    if (id && !transport) {
      await req.body?.cancel();
      return new Response(
        JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }),
        {
          status: 404,
        },
      );
    }
    if (!transport) {
      const made = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sessionId) => {
          counts.opened++;
          transports.set(sessionId, made);
        },
      });
      await build(seen).connect(made);
      transport = made;
    }
    const body = req.method === "POST" ? await req.clone().json().catch(() => undefined) : undefined;
    if (body?.method && body.id !== undefined && !String(body.method).startsWith("tools/call")) {
      seen.push(String(body.method));
    }
    if (body?.method && body.id === undefined) notices.push({ method: String(body.method), params: body.params });
    return await transport.handleRequest(req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    notices,
    headers,
    sessions: counts,
    get mode() {
      return state.mode;
    },
    set mode(value) {
      state.mode = value;
    },
    forgetSessions() {
      transports = new Map();
    },
    async [Symbol.asyncDispose]() {
      await Promise.all([...transports.values()].map((transport) => transport.close()));
      await server.shutdown();
    },
  };
}

/** The stdio test server's command line, for a config's `command`. */
export function stdioCommand(): string[] {
  const script = new URL("./_mcp_stdio_server.ts", import.meta.url).pathname;
  // The MCP SDK it imports is a test package: tests/deno.json names it, the gateway's deno.json does not.
  const config = new URL("./deno.json", import.meta.url).pathname;
  return [Deno.execPath(), "run", "--quiet", "--no-prompt", "--config", config, "--allow-env", "--allow-read", script];
}
