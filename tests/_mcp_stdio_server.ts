/**
 * @module The stdio MCP server of the tests, made with the official SDK: it tells its environment and its process id,
 * echoes, answers with as many bytes as asked, reports progress, and exits when asked to.
 */
import { z } from "zod";
import { McpServer, StdioServerTransport } from "./_mcp_sdk.ts";

const server = new McpServer({ name: "local", version: "1.0.0" });
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
server.registerTool(
  "echo",
  { description: "Echoes", inputSchema: { text: z.string() } },
  ({ text: value }) => text(value),
);
server.registerTool(
  "env",
  { description: "The environment it runs with" },
  () => text(JSON.stringify(Deno.env.toObject())),
);
server.registerTool("pid", { description: "Its process id" }, () => text(String(Deno.pid)));
server.registerTool(
  "big",
  { description: "Answers n bytes", inputSchema: { bytes: z.number() } },
  ({ bytes }) => text("x".repeat(bytes)),
);
server.registerTool("exit", { description: "Exits at once" }, () => Deno.exit(3));
server.registerTool("progress", { description: "Reports progress twice", inputSchema: {} }, async (_args, extra) => {
  const token = extra._meta?.progressToken;
  for (const step of [1, 2]) {
    if (token !== undefined) {
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: step },
      });
    }
  }
  return text(`done, token ${JSON.stringify(token)}`);
});
await server.connect(new StdioServerTransport());
