/**
 * @module Reading token usage from an upstream's answer in its own protocol: a non-streamed body, or the
 * stream's events as they pass (Anthropic usage is cumulative; OpenAI chat sends one usage chunk).
 */
import type { Usage } from "../core/exchange.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject, type UpstreamProtocol } from "../core/types.ts";

/** Collects usage from a stream, event by event. */
export interface UsageMeter {
  /** Looks at one upstream event. */
  event(message: SseMessage): void;
  /** Looks at a non-streamed upstream body. */
  body(body: JsonObject): void;
  /** What has been seen so far, or undefined when nothing was. */
  usage(): Usage | undefined;
  /**
   * "finished" once the terminal event passed (message_stop, [DONE], response.completed ...), "finishing" once an
   * end would be acceptable (chat's finish chunk), "errored" once the upstream sent its own in-band error, else "open".
   */
  state(): StreamState;
}

/** Where an upstream stream stands. */
export type StreamState = "open" | "finishing" | "finished" | "errored";

/** The upstream's own in-band error events per protocol. */
const ERRORS: Record<UpstreamProtocol, (message: SseMessage) => boolean> = {
  anthropic: (m) => m.event === "error",
  "openai-chat": (m) => m.data.startsWith('{"error"'),
};

/** The events after which a stream in each protocol is complete and nothing more will come. */
const TERMINAL: Record<UpstreamProtocol, (message: SseMessage) => boolean> = {
  anthropic: (m) => m.event === "message_stop" || (m.event === undefined && m.data.includes('"message_stop"')),
  "openai-chat": (m) => m.data === "[DONE]",
};

/** Events after which an end of the stream is acceptable though more may follow (chat's finish chunk: some
 * OpenAI-compatible servers end there without usage or [DONE]). */
const FINISHING: Partial<Record<UpstreamProtocol, (message: SseMessage) => boolean>> = {
  "openai-chat": (m) => /"finish_reason":\s*"/.test(m.data),
};

/** A token count as a whole number: anything else an upstream sends counts as none. */
function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.trunc(value) : 0;
}

function anthropicUsage(raw: JsonObject, into: Usage): void {
  // Later events overwrite earlier ones field by field, as the SDKs do.
  if ("input_tokens" in raw) into.input_tokens = count(raw.input_tokens);
  if ("output_tokens" in raw) into.output_tokens = count(raw.output_tokens);
  if ("cache_read_input_tokens" in raw) into.cache_read_input_tokens = count(raw.cache_read_input_tokens);
  if ("cache_creation_input_tokens" in raw) into.cache_creation_input_tokens = count(raw.cache_creation_input_tokens);
}

function openaiUsage(raw: JsonObject, into: Usage): void {
  // Chat: prompt_tokens includes cached tokens; Responses: input_tokens does. Both count them once here.
  const prompt = count(raw.prompt_tokens ?? raw.input_tokens);
  const details = raw.prompt_tokens_details ?? raw.input_tokens_details;
  const cached = isObject(details) ? count(details.cached_tokens) : 0;
  // Some compatible servers report cache writes too, inside the prompt; they are priced at the cache-write rate.
  const written = Math.min(
    Math.max(0, prompt - cached),
    count((isObject(details) ? details.cache_creation_tokens : undefined) ?? raw.cache_creation_input_tokens),
  );
  into.input_tokens = Math.max(0, prompt - cached - written);
  into.cache_read_input_tokens = cached;
  into.cache_creation_input_tokens = written;
  into.output_tokens = count(raw.completion_tokens ?? raw.output_tokens);
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;

function parse(data: string): JsonObject | undefined {
  // Only events with a usage object are parsed; the rest pass by with a cheap test. OpenAI sends `"usage":null` on
  // every chunk of a stream that asked for usage, and those carry nothing.
  if (!USAGE_OBJECT.test(data)) return undefined;
  try {
    const value = JSON.parse(data);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A meter for an upstream speaking `protocol`. */
export function usageMeter(protocol: UpstreamProtocol): UsageMeter {
  let seen: Usage | undefined;
  let state: StreamState = "open";
  const terminal = TERMINAL[protocol];
  const finishing = FINISHING[protocol];
  const errored = ERRORS[protocol];
  const fresh = (): Usage =>
    seen ??= { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  function take(body: JsonObject): void {
    if (protocol === "anthropic") {
      const message = isObject(body.message) ? body.message : body;
      if (isObject(message.usage)) anthropicUsage(message.usage, fresh());
      else if (isObject(body.usage)) anthropicUsage(body.usage, fresh());
      return;
    }
    const holder = isObject(body.response) ? body.response : body;
    if (isObject(holder.usage)) openaiUsage(holder.usage, fresh());
  }
  return {
    event(message) {
      if (state === "open" || state === "finishing") {
        if (errored(message)) state = "errored";
        else if (terminal(message)) state = "finished";
        else if (state === "open" && finishing?.(message)) state = "finishing";
      }
      const body = parse(message.data);
      if (body) take(body);
    },
    body: take,
    usage: () => seen && { ...seen },
    state: () => state,
  };
}
