/**
 * @module A non-streamed upstream answer read within its upstream's `max_answer_bytes` (see docs/operating.md, "Answer
 * sizes"), held once: its bytes go into one buffer as they arrive (sized by the answer's Content-Length when it gives
 * one), are let go of once decoded, and the text is parsed once; a translated answer lets go of its text once parsed,
 * so the translation holds only the parsed answer, and is written out from it a piece at a time as the client reads.
 */
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { holdsMoreThan, jsonPieces } from "../core/json_pieces.ts";
import type { TextRedactor } from "../core/redact.ts";

/** The first buffer of an answer that gives no Content-Length; it doubles as the answer outgrows it. */
const FIRST_BUFFER_BYTES = 64 * 1024;
/** A translated answer whose text is past this many characters is written out in pieces of it. */
const PIECE_CHARS = 64 * 1024;

/** An answer's bytes as read. */
export interface AnswerBytes {
  bytes?: Uint8Array<ArrayBuffer>;
}

/**
 * Reads `res`'s body whole, or none of it past `maxBytes`: then the body is cancelled and the answer is a 502 naming
 * the limit. A failure of the connection while reading is thrown as the runtime reports it.
 */
export async function readAnswerBytes(res: Response, maxBytes: number, upstream: string): Promise<AnswerBytes> {
  const tooLarge = () =>
    new GatewayError(
      "upstream",
      `Upstream "${upstream}" answered with a body larger than its limit of ${maxBytes} bytes (max_answer_bytes)`,
    );
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (!res.body) return { bytes: new Uint8Array(0) };
  let buffer = new Uint8Array(Number.isSafeInteger(declared) && declared >= 0 ? declared : FIRST_BUFFER_BYTES);
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.length > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    if (size + value.length > buffer.length) {
      const grown = new Uint8Array(Math.min(maxBytes, Math.max(buffer.length * 2, size + value.length)));
      grown.set(buffer.subarray(0, size));
      buffer = grown;
    }
    buffer.set(value, size);
    size += value.length;
  }
  return { bytes: buffer.subarray(0, size) };
}

/** An answer opened for the relay: its text with the upstream's secrets out, and that text parsed. */
export interface OpenedAnswer {
  /** The text, every form of the upstream's secrets taken out; "" once let go of. */
  readonly text: string;
  /** The text parsed, or undefined when it is not JSON. */
  readonly json: unknown;
  /** Lets go of the text, so what follows (a translation) holds only the parsed answer. */
  release(): void;
}

/**
 * Decodes `read` once, letting go of its bytes before the text is parsed (a passthrough answer is sent as the text,
 * whose parse is let go of by then), and takes the upstream's secrets out of the text first.
 */
export function openAnswer(read: AnswerBytes, redactor: TextRedactor): OpenedAnswer {
  let text = new TextDecoder().decode(read.bytes);
  read.bytes = undefined;
  text = redactor.text(text);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return {
    get text() {
      return text;
    },
    json,
    release() {
      text = "";
    },
  };
}

/** A response whose body is `pieces`, each encoded only when the client reads it. */
function piecewise(pieces: Iterator<string>, init: ResponseInit): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const step = pieces.next();
      if (step.done) controller.close();
      else controller.enqueue(encoder.encode(step.value));
    },
  }, { highWaterMark: 0 });
  return new Response(body, init);
}

/** `text` in slices of about {@linkcode PIECE_CHARS}, never cut between the halves of a surrogate pair. */
function* slices(text: string): Generator<string> {
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + PIECE_CHARS);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(at, end);
    at = end;
  }
}

const JSON_TYPE = { "content-type": "application/json" };

/**
 * The client's response for a passthrough answer: its text as it came (secrets out), a large one encoded a slice at
 * a time as the client reads, so its bytes are never a second whole copy.
 */
export function passedResponse(text: string, status: number): Response {
  if (text.length <= PIECE_CHARS) return new Response(text, { status, headers: JSON_TYPE });
  return piecewise(slices(text), { status, headers: JSON_TYPE });
}

/**
 * The client's JSON response for a translated answer: a small one as one text, a large one written out from the value
 * a piece at a time as the client reads, so its whole JSON is never one string (nor its bytes one buffer).
 */
export function translatedResponse(value: unknown): Response {
  if (!holdsMoreThan(value, PIECE_CHARS)) return json(value);
  return piecewise(jsonPieces(value, PIECE_CHARS), { headers: JSON_TYPE });
}
