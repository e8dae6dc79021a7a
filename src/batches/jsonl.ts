/**
 * @module JSON Lines as batches carry them: read line by line as they arrive (never whole), and written back with no
 * blank line, since the Anthropic SDK's reader parses every line, empty ones included.
 */

/** The non-blank lines of a stream of UTF-8 text, as they arrive. */
export async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let rest = "";
  for await (const text of body.pipeThrough(new TextDecoderStream())) {
    rest += text;
    let end: number;
    while ((end = rest.indexOf("\n")) !== -1) {
      const line = rest.slice(0, end).trim();
      rest = rest.slice(end + 1);
      if (line !== "") yield line;
    }
  }
  if (rest.trim() !== "") yield rest.trim();
}

const encoder = new TextEncoder();

/** The stream again, each non-blank line ending in one newline; `each` sees every line on its way. */
export function cleanLines(
  body: ReadableStream<Uint8Array>,
  each?: (line: string) => void,
): ReadableStream<Uint8Array> {
  const source = lines(body);
  return new ReadableStream({
    async pull(controller) {
      const next = await source.next();
      if (next.done) return controller.close();
      each?.(next.value);
      controller.enqueue(encoder.encode(`${next.value}\n`));
    },
    async cancel() {
      await source.return(undefined);
    },
  });
}

/** A line parsed as a JSON object, or undefined. */
export function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
