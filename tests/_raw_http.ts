/** @module HTTP/1.1 by hand over a loopback socket, for what no fetch client sends: a body that stops arriving. */
import { within } from "./_reads.ts";

/** Sends raw bytes of HTTP/1.1 and reads one response (head and content-length body), or until the close. */
export async function rawExchange(
  url: string,
  request: string,
  deadlineMs = 5000,
): Promise<{ head: string; body: string }> {
  const { port } = new URL(url);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  try {
    await conn.write(new TextEncoder().encode(request)).catch(() => {});
    let text = "";
    const buffer = new Uint8Array(65536);
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    const read = async () => {
      for (;;) {
        const end = text.indexOf("\r\n\r\n");
        if (end !== -1) {
          const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
          // content-length counts bytes, and a page's text may hold characters of more than one.
          const body = text.slice(end + 4);
          if (encoder.encode(body).byteLength >= length) return { head: text.slice(0, end), body };
        }
        const n = await conn.read(buffer);
        if (n === null) return { head: text, body: "" };
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
      }
    };
    return await within(read(), deadlineMs, "the response");
  } finally {
    conn.close();
  }
}

/** The head of a POST to `path` with `headers`, ready for its body. */
export function head(path: string, headers: Record<string, string>): string {
  return `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
  }\r\n`;
}

/** A whole request with the given headers, `host` included (fetch always sends its own), and a body. */
export function rawRequest(method: string, path: string, headers: Record<string, string>, body = ""): string {
  const lines = Object.entries({ ...headers, "content-length": String(new TextEncoder().encode(body).byteLength) });
  return `${method} ${path} HTTP/1.1\r\n${
    lines.map(([k, v]) => `${k}: ${v}\r\n`).join("")
  }connection: close\r\n\r\n${body}`;
}
