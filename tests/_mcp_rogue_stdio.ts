/**
 * @module A stdio MCP server that misbehaves as its one argument says, written by hand (one JSON-RPC message a line)
 * so that it can: `exit` exits at once, before any handshake; `lines` answers the tool `line` with a response line of
 * exactly the `bytes` it is asked for; `chatty` also prints its `ROGUE_SECRET` on stderr at the start and at each call.
 */
const mode = Deno.args[0];
if (mode === "exit") Deno.exit(7);

const encoder = new TextEncoder();
const write = (message: unknown) => Deno.stdout.writeSync(encoder.encode(`${JSON.stringify(message)}\n`));
const shout = (text: string) => mode === "chatty" && Deno.stderr.writeSync(encoder.encode(`${text}\n`));

/** The response to `id` carrying a text of the length that makes its line `bytes` long (a text of ASCII). */
function lineOf(id: unknown, bytes: number): unknown {
  const shape = (text: string) => ({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text }] } });
  return shape("z".repeat(Math.max(0, bytes - JSON.stringify(shape("")).length)));
}

shout(`starting with ${Deno.env.get("ROGUE_SECRET")}`);
const decoder = new TextDecoder();
let buffered = "";
for await (const chunk of Deno.stdin.readable) {
  buffered += decoder.decode(chunk, { stream: true });
  let end: number;
  while ((end = buffered.indexOf("\n")) !== -1) {
    const message = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (message.id === undefined) continue;
    if (message.method === "initialize") {
      write({
        jsonrpc: "2.0",
        id: message.id,
        result: {
          protocolVersion: "2025-11-25",
          capabilities: { tools: {} },
          serverInfo: { name: "rogue", version: "1" },
        },
      });
    } else if (message.method === "tools/list") {
      const tool = { name: "line", inputSchema: { type: "object", properties: { bytes: { type: "number" } } } };
      write({ jsonrpc: "2.0", id: message.id, result: { tools: [tool] } });
    } else if (message.method === "tools/call") {
      shout(`called with ${Deno.env.get("ROGUE_SECRET")}`);
      write(lineOf(message.id, Number(message.params?.arguments?.bytes ?? 0)));
    } else write({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } });
  }
}
