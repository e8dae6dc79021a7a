/**
 * @module Reading what the gateway answers, within deadlines: a read either completes or fails naming what it waited
 * for, and a body given up on is cancelled, so a broken gateway makes a test fail instead of hang; and a teardown that
 * ends what a test left open instead of waiting on it forever.
 */
import { GatewayError } from "../src/core/errors.ts";
import { type SseMessage, SseParser } from "../src/core/sse.ts";

/** How long one read of a response may wait: far above any read on a loaded machine, far below a hang. */
export const READ_DEADLINE_MS = 15_000;

/** How long a whole request may take, response body included, for requests made through {@linkcode deadlineFetch}. */
export const REQUEST_DEADLINE_MS = 30_000;

/** Settles as `promise` does, or rejects naming `what` once `ms` pass first, so a test fails rather than hangs. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A response body read piece by piece, each read under a deadline; disposing it cancels whatever is left. */
export interface BodyReader extends AsyncDisposable {
  /** The next chunk as text, or undefined at the end of the body. */
  next(): Promise<string | undefined>;
  /** Everything left, to the end of the body, under one deadline. */
  rest(): Promise<string>;
  /** Chunks until the text they make up satisfies `enough` (or the body ends), under one deadline. */
  until(enough: (text: string) => boolean): Promise<string>;
  /** Gives up on the rest of the body (the gateway sees the client leave). */
  cancel(): Promise<void>;
}

/** Reads `res`'s body under `ms` per call; use it with `await using` so it is cancelled however the test ends. */
export function bodyReader(res: Response, ms = READ_DEADLINE_MS): BodyReader {
  const reader = res.body?.getReader();
  const decoder = new TextDecoder();
  let done = reader === undefined;
  async function next(): Promise<string | undefined> {
    if (done) return undefined;
    const read = await reader!.read();
    if (read.done) {
      done = true;
      return undefined;
    }
    return decoder.decode(read.value, { stream: true });
  }
  async function until(enough: (text: string) => boolean): Promise<string> {
    let text = "";
    while (!enough(text)) {
      const chunk = await next();
      if (chunk === undefined) return text + decoder.decode();
      text += chunk;
    }
    return text;
  }
  async function cancel(): Promise<void> {
    done = true;
    await reader?.cancel().catch(() => {});
  }
  /** Runs a read under the deadline; a read that overruns cancels the body, so nothing waits on it any more. */
  async function bounded<T>(read: () => Promise<T>, what: string): Promise<T> {
    try {
      return await within(read(), ms, what);
    } catch (err) {
      await cancel();
      throw err;
    }
  }
  return {
    next: () => bounded(next, "the next chunk of the response"),
    rest: () => bounded(() => until(() => false), "the end of the response"),
    until: (enough) => bounded(() => until(enough), "the expected part of the response"),
    cancel,
    [Symbol.asyncDispose]: cancel,
  };
}

/** A whole response body as text, within the deadline. */
export async function readText(res: Response, ms = READ_DEADLINE_MS): Promise<string> {
  await using body = bodyReader(res, ms);
  return await body.rest();
}

/** A whole SSE response as events, within the deadline. */
export async function readSse(res: Response, ms = READ_DEADLINE_MS): Promise<SseMessage[]> {
  return new SseParser().push(await readText(res, ms));
}

/**
 * A `fetch` whose requests are aborted after `ms`, body included, on top of the caller's own signal: what the
 * official SDKs are given in tests, since their own timeout stops at the response headers.
 */
export function deadlineFetch(ms = REQUEST_DEADLINE_MS): typeof fetch {
  return (input, init) => {
    const deadline = AbortSignal.timeout(ms);
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    return fetch(input, { ...init, signal });
  };
}

/**
 * Shuts `server` down; when a response is still open after `graceMs` (a test left a stream unread), the gateway's
 * grace period ends at once, as after SIGTERM, so teardown finishes. Returns the grace spent then, or 0.
 */
export async function shutdownWithin(
  server: Deno.HttpServer,
  closing: AbortController,
  graceMs: number,
): Promise<number> {
  const shutdown = server.shutdown();
  const ended = () => shutdown.then(() => true);
  if (await settlesWithin(ended(), graceMs)) return 0;
  closing.abort(new GatewayError("unavailable", "The gateway under test is shutting down"));
  // A response that even the end of the grace period does not close is left behind; the test fails either way.
  await settlesWithin(ended(), graceMs);
  return graceMs;
}

/** True when `promise` settles within `ms`, false when the time runs out first. */
async function settlesWithin(promise: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
