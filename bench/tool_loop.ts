/**
 * @module The tool-loop case: one agent loop of N turns against the gateway, each turn adding about 2 KB of tool
 * output, run over one Responses WebSocket (each turn sends only its new item with `previous_response_id`, under
 * `store: false`), over HTTP (each turn sends the whole conversation) and over HTTP chained through the gateway's
 * store (each turn sends its new item with `previous_response_id`; the gateway reads the rest from KV). Time and
 * gateway CPU per turn, and the bytes the client sent and the upstream received, side by side: what the client sends
 * on a chained turn is what an upstream that kept the conversation itself would receive.
 */
import WebSocket from "ws";
import { STATS_PATH } from "./fake_upstream.ts";
import { readCpuMs } from "./processes.ts";

/** One transport's figures for the loop. */
export interface ToolLoopSide {
  model: string;
  transport: "websocket" | "http" | "chained";
  turns: number;
  msPerTurn: number;
  cpuMsPerTurn: number;
  clientBytes: number;
  upstreamBytes: number;
}

/** Where the loop runs: the gateway (its URL, a token, its pid for CPU) and the fake upstream (for its byte count). */
export interface ToolLoopTarget {
  gatewayUrl: string;
  upstreamUrl: string;
  token: string;
  gatewayPid: number;
  model: string;
}

const TOOL_OUTPUT = "tool output line: the quick brown fox jumps over the lazy dog.\n".repeat(32);

/** One turn's new item: what a tool gave back. */
function toolItem(turn: number): Record<string, unknown> {
  return { type: "message", role: "user", content: `turn ${turn}\n${TOOL_OUTPUT}` };
}

async function upstreamBytes(url: string): Promise<number> {
  const res = await fetch(`${url}${STATS_PATH}`);
  return (await res.json()).received_bytes;
}

/** The response a streamed answer completed, from its SSE text. */
function completedOf(text: string): { id: string; output: unknown[] } {
  const line = text.split("\n").find((l) => l.startsWith("data: ") && l.includes('"response.completed"'));
  if (!line) throw new Error(`the stream did not complete: ${text.slice(0, 200)}`);
  return JSON.parse(line.slice(6)).response;
}

async function overHttp(target: ToolLoopTarget, turns: number): Promise<number> {
  let conversation: unknown[] = [];
  let sent = 0;
  for (let turn = 0; turn < turns; turn++) {
    const input = [...conversation, toolItem(turn)];
    const body = JSON.stringify({ model: target.model, input, store: false, stream: true, max_output_tokens: 64 });
    sent += body.length;
    const res = await fetch(`${target.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": target.token },
      body,
    });
    if (res.status !== 200) throw new Error(`HTTP turn ${turn}: ${res.status} ${await res.text()}`);
    conversation = [...input, ...completedOf(await res.text()).output];
  }
  return sent;
}

async function chained(target: ToolLoopTarget, turns: number): Promise<number> {
  let previous: string | undefined;
  let sent = 0;
  for (let turn = 0; turn < turns; turn++) {
    const body = JSON.stringify({
      model: target.model,
      input: [toolItem(turn)],
      previous_response_id: previous,
      stream: true,
      max_output_tokens: 64,
    });
    sent += body.length;
    const res = await fetch(`${target.gatewayUrl}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": target.token },
      body,
    });
    if (res.status !== 200) throw new Error(`chained turn ${turn}: ${res.status} ${await res.text()}`);
    previous = completedOf(await res.text()).id;
  }
  return sent;
}

async function overSocket(target: ToolLoopTarget, turns: number): Promise<number> {
  const url = `${target.gatewayUrl.replace(/^http/, "ws")}/v1/responses`;
  // The ws package, as the OpenAI SDK's ResponsesWS uses: Deno's own WebSocket client holds a large message back for
  // the server's delayed ACK (about 40 ms a turn), which would measure the client rather than the gateway.
  const ws = new WebSocket(url, { headers: { "x-api-key": target.token } });
  const waiting: Array<(event: Record<string, unknown>) => void> = [];
  ws.on("message", (data: unknown) => {
    const event = JSON.parse(String(data));
    if (event.type === "response.completed" || event.type === "error") waiting.shift()?.(event);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", (err: Error) => reject(err));
  });
  let previous: string | undefined;
  let sent = 0;
  try {
    for (let turn = 0; turn < turns; turn++) {
      const text = JSON.stringify({
        type: "response.create",
        model: target.model,
        input: [toolItem(turn)],
        previous_response_id: previous,
        store: false,
        max_output_tokens: 64,
      });
      sent += text.length;
      const done = new Promise<Record<string, unknown>>((resolve) => waiting.push(resolve));
      ws.send(text);
      const event = await done;
      if (event.type === "error") throw new Error(`socket turn ${turn}: ${JSON.stringify(event)}`);
      previous = (event.response as { id: string }).id;
    }
  } finally {
    const closed = new Promise((resolve) => ws.once("close", resolve));
    ws.close();
    await closed;
  }
  return sent;
}

/**
 * Runs the loop `loops` times over each transport (after one short unmeasured loop of each, to warm up); CPU is read
 * in 10 ms ticks, so several loops make its figure per turn meaningful. Bytes are those of one loop.
 */
export async function toolLoop(target: ToolLoopTarget, options = { turns: 20, loops: 5 }): Promise<ToolLoopSide[]> {
  const { turns, loops } = options;
  const sides: ToolLoopSide[] = [];
  for (const [transport, run] of [["websocket", overSocket], ["http", overHttp], ["chained", chained]] as const) {
    await run(target, 3);
    const bytesBefore = await upstreamBytes(target.upstreamUrl);
    const cpuBefore = await readCpuMs(target.gatewayPid);
    const started = performance.now();
    let clientBytes = 0;
    for (let i = 0; i < loops; i++) clientBytes += await run(target, turns);
    const ms = performance.now() - started;
    const cpu = await readCpuMs(target.gatewayPid) - cpuBefore;
    const upstream = await upstreamBytes(target.upstreamUrl) - bytesBefore;
    sides.push({
      model: target.model,
      transport,
      turns,
      msPerTurn: ms / (turns * loops),
      cpuMsPerTurn: cpu / (turns * loops),
      clientBytes: clientBytes / loops,
      upstreamBytes: upstream / loops,
    });
  }
  return sides;
}

/** The loop's lines of the report. */
export function toolLoopTable(sides: readonly ToolLoopSide[]): string[] {
  if (sides.length === 0) return [];
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
  return [
    "",
    `Tool loop (${sides[0].turns} turns, about 2 KB of tool output each; bytes per loop)`,
    "model         transport    ms/turn  gateway CPU ms/turn  client sent  upstream received",
    ...sides.map((s) =>
      `${s.model.padEnd(12)}  ${s.transport.padEnd(11)}  ${s.msPerTurn.toFixed(1).padStart(7)}  ${
        s.cpuMsPerTurn.toFixed(1).padStart(19)
      }  ${kb(s.clientBytes).padStart(11)}  ${kb(s.upstreamBytes).padStart(17)}`
    ),
  ];
}
