/** @module A Responses WebSocket client for tests: messages read with a deadline, the close awaited, a raw handshake. */
import { handshakeBytes } from "../bench/raw_socket.ts";
import { READ_DEADLINE_MS, within } from "./_reads.ts";

/** A socket under test; every read has a deadline, and disposing closes it. */
export interface TestSocket extends AsyncDisposable {
  ws: WebSocket;
  /** Sends one message: an object as JSON, a string as it is. */
  send(message: unknown): void;
  /** The next message, parsed. */
  next(): Promise<Record<string, unknown>>;
  /** Messages up to and including the first whose type is one of `types`. */
  until(...types: string[]): Promise<Record<string, unknown>[]>;
  /** Resolves when the socket has closed, with the server's code and reason. */
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens `ws://.../v1/responses` with `headers` (the token), resolving once it is open. */
export async function openSocket(baseUrl: string, headers: Record<string, string>): Promise<TestSocket> {
  const url = `${baseUrl.replace(/^http/, "ws")}/v1/responses`;
  // Deno's WebSocket takes handshake headers as a second-argument option.
  const ws = new WebSocket(url, { headers } as unknown as string[]);
  const queue: string[] = [];
  const waiting: Array<(text: string | undefined) => void> = [];
  const { promise: closed, resolve: onClosed } = Promise.withResolvers<{ code: number; reason: string }>();
  let isClosed = false;
  ws.onmessage = (event) => {
    const take = waiting.shift();
    if (take) take(event.data);
    else queue.push(event.data);
  };
  ws.onclose = (event) => {
    isClosed = true;
    onClosed({ code: event.code, reason: event.reason });
    for (const take of waiting.splice(0)) take(undefined);
  };
  ws.onerror = () => {};
  const opened = new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    closed.then(() => reject(new Error("the socket closed before it opened")));
  });
  await within(opened, READ_DEADLINE_MS, "the socket opening");
  async function next(): Promise<Record<string, unknown>> {
    const text = queue.shift() ?? (isClosed ? undefined : await within(
      new Promise<string | undefined>((resolve) => waiting.push(resolve)),
      READ_DEADLINE_MS,
      "the next socket message",
    ));
    if (text === undefined) throw new Error("the socket closed while a message was awaited");
    return JSON.parse(text);
  }
  return {
    ws,
    send: (message) => ws.send(typeof message === "string" ? message : JSON.stringify(message)),
    next,
    async until(...types) {
      const seen: Record<string, unknown>[] = [];
      for (;;) {
        const message = await next();
        seen.push(message);
        if (types.includes(message.type as string)) return seen;
      }
    },
    closed: within(closed, READ_DEADLINE_MS * 2, "the socket closing"),
    async [Symbol.asyncDispose]() {
      if (!isClosed) ws.close();
      await closed;
    },
  };
}

/** A WebSocket handshake sent by hand, so a test sees a refusal's status and body as the HTTP route gives them. */
export async function rawHandshake(
  baseUrl: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; body: string }> {
  const { hostname, port } = new URL(baseUrl);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  try {
    await conn.write(handshakeBytes(hostname, port, headers));
    let text = "";
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    // The head, then as many body bytes as content-length says (a refusal has one; a 101 has none).
    for (;;) {
      const n = await within(conn.read(buffer), READ_DEADLINE_MS, "the handshake's answer");
      if (n === null) break;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
      const end = text.indexOf("\r\n\r\n");
      if (end === -1) continue;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (text.length - end - 4 >= length || text.startsWith("HTTP/1.1 101")) break;
    }
    const end = text.indexOf("\r\n\r\n");
    const [statusLine, ...headerLines] = text.slice(0, end).split("\r\n");
    const parsed = new Headers();
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      parsed.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    return { status: Number(statusLine.split(" ")[1]), headers: parsed, body: text.slice(end + 4) };
  } finally {
    conn.close();
  }
}

/** A `response.create` event for the test config's Anthropic model, store: false, with `extra` fields. */
export const create = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: "response.create",
  model: "claude-test",
  input: "Hi",
  store: false,
  ...extra,
});
