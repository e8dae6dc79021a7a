/**
 * @module Structured logging: one line per request (an exchange observer) and the gateway's event lines, both
 * filtered by level and written as JSON or, for people at a terminal, as a short readable line.
 */
import type { Exchange, Observer } from "../core/exchange.ts";
import { type TextRedactor, textRedactor } from "../core/redact.ts";

/** Severity, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** The config's `log` section. */
export interface LogSettings {
  level: LogLevel;
  format: "json" | "pretty";
}

/** A structured log line; `event` names what happened, `level` defaults by event. */
export type LogLine = Record<string, unknown>;

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Levels of the gateway's own events; anything unlisted (such as a translation note) is info. */
const EVENT_LEVELS: Record<string, LogLevel> = {
  internal_error: "error",
  upstream_error: "warn",
};

function levelOf(line: LogLine): LogLevel {
  const given = line.level;
  if (typeof given === "string" && given in RANK) return given as LogLevel;
  return EVENT_LEVELS[String(line.event)] ?? "info";
}

/** Options for {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Writes one finished line (without its newline). */
  write(text: string): void;
  now(): Date;
}

/** A line writer that gathers the lines finished within one turn of the event loop and writes them at once. */
export interface BatchedWriter {
  write(text: string): void;
  /** Writes what is pending now (at shutdown). */
  flush(): void;
}

/**
 * Batches lines for `write`: under load one request finishes per few dozen microseconds, and a write per line
 * was the largest cost of logging. Lines stay whole and in order; a crash loses at most one turn's lines.
 */
export function batchedWriter(write: (text: string) => void): BatchedWriter {
  let pending: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join("\n");
    pending = [];
    write(text);
  }
  return {
    write(text) {
      pending.push(text);
      timer ??= setTimeout(flush, 0);
    },
    flush,
  };
}

/** A log sink: drops lines below the level, stamps time and level, and formats the rest. */
export function createLogger(settings: LogSettings, options: LoggerOptions): (line: LogLine) => void {
  return function log(line: LogLine): void {
    const level = levelOf(line);
    if (RANK[level] < RANK[settings.level]) return;
    const stamped = { time: options.now().toISOString(), level, ...line };
    options.write(settings.format === "json" ? JSON.stringify(stamped) : pretty(stamped));
  };
}

/**
 * A sink that hands `log` each line with `secrets()` taken out of every value in it (nested ones and property names
 * too): the upstreams' credentials, whatever their shape, must never be written down, whichever line an upstream's
 * text reaches (an id it named, an error's message). The secrets are asked for each line, since a cloud's access token
 * changes; the redactor is made again only when they did.
 */
export function redactingLog(log: (line: LogLine) => void, secrets: () => readonly string[]): (line: LogLine) => void {
  let made: { key: string; redactor: TextRedactor } | undefined;
  return (line) => {
    const current = secrets();
    if (current.length === 0) return log(line);
    const key = current.join("\n");
    if (made?.key !== key) made = { key, redactor: textRedactor(current) };
    log(made.redactor.value(line));
  };
}

/**
 * The access log line of one finished exchange; only ids and counts, never a secret or a prompt. A model id
 * outside `knownModels` is client input that may hold anything (even a pasted key), so it is logged as "other".
 */
export function requestLine(exchange: Exchange, knownModels: ReadonlySet<string>): LogLine {
  const failed = exchange.status >= 500 || (exchange.error !== undefined && exchange.status < 400);
  const line: LogLine = {
    level: failed ? "warn" : "info",
    event: "request",
    request_id: exchange.request_id,
    method: exchange.method,
    route: exchange.route,
    protocol: exchange.protocol,
    status: exchange.status,
    duration_ms: exchange.duration_ms,
    ttfb_ms: exchange.ttfb_ms,
    token_id: exchange.token_id,
    group: exchange.group,
    model: exchange.model === undefined || knownModels.has(exchange.model) ? exchange.model : "other",
    stream: exchange.stream,
    transport: exchange.transport,
    upstream: exchange.upstream,
    affinity: exchange.affinity,
    compaction: exchange.compaction,
    attempts: exchange.attempts.map(({ upstream, outcome, status, request_id }) =>
      request_id ? { upstream, outcome, status, request_id } : { upstream, outcome, status }
    ),
    input_tokens: exchange.usage?.input_tokens,
    output_tokens: exchange.usage?.output_tokens,
    cache_read_input_tokens: exchange.usage?.cache_read_input_tokens,
    cache_creation_input_tokens: exchange.usage?.cache_creation_input_tokens,
    reasoning_output_tokens: exchange.usage?.reasoning_output_tokens,
    usage_complete: exchange.usage_complete,
    error: exchange.error,
  };
  // An embeddings request's counts; its text never.
  if (exchange.embeddings) line.embeddings = { ...exchange.embeddings };
  // A request to /mcp: its method and, for a call, where it went and how it ended (never its arguments or result).
  const mcp = exchange.mcp;
  if (mcp) {
    line.mcp = {
      method: mcp.method,
      server: mcp.server,
      name: mcp.name,
      outcome: mcp.outcome,
      request_bytes: mcp.request_bytes,
      response_bytes: mcp.response_bytes,
    };
  }
  // What the guardrails did: rules, kinds and counts, never the matched text.
  if (exchange.guardrails?.length) line.guardrails = exchange.guardrails;
  // With tracing on, the line names the request's server span, so a backend links the two.
  const trace = exchange.trace;
  if (trace?.traceId) {
    line.trace_id = trace.traceId;
    line.span_id = trace.spanId;
  }
  return line;
}

/** An observer that logs every finished exchange through `log`. */
export function accessLog(log: (line: LogLine) => void, knownModels: Iterable<string>): Observer {
  const models = new Set(knownModels);
  return { finish: (exchange) => log(requestLine(exchange, models)) };
}

/** `POST /v1/messages 200 912ms ttfb=40ms model=m via=up in=5 out=7 token=tok_1 group=g`, for request lines. */
function prettyRequest(line: LogLine): string[] {
  const parts = [`${line.method} ${line.route} ${line.status}`, `${line.duration_ms}ms`, `ttfb=${line.ttfb_ms}ms`];
  const optional: Array<[string, unknown]> = [
    ["model", line.model],
    ["via", line.upstream],
    ["pin", line.affinity],
    ["compacted", line.compaction],
    ["in", line.input_tokens],
    ["out", line.output_tokens],
    ["stream", line.stream ? "yes" : undefined],
    ["transport", line.transport],
    ["error", line.error],
    ["token", line.token_id],
    ["group", line.group],
  ];
  const mcp = line.mcp as Record<string, unknown> | undefined;
  if (mcp) {
    const called = mcp.server ? ` ${mcp.server}${mcp.name ? `/${mcp.name}` : ""}` : "";
    optional.unshift(["mcp", `${mcp.method}${called}`], ["outcome", mcp.outcome]);
  }
  for (const [key, value] of optional) if (value !== undefined && value !== null) parts.push(`${key}=${value}`);
  if (Array.isArray(line.attempts) && line.attempts.length > 1) {
    parts.push(`attempts=${line.attempts.map((a) => `${a.upstream}:${a.outcome}`).join(",")}`);
  }
  return parts;
}

const GENERIC_SKIP = new Set(["time", "level", "event", "request_id"]);

/** `20:31:05.123 INFO  <what happened> key=value ... [request id]`, for `deno task dev`. */
function pretty(line: LogLine): string {
  const time = String(line.time).slice(11, 23);
  const level = String(line.level).toUpperCase().padEnd(5);
  const parts = line.event === "request" ? prettyRequest(line) : [
    String(line.event ?? "log"),
    ...Object.entries(line)
      .filter(([key, value]) => !GENERIC_SKIP.has(key) && value !== undefined && value !== null)
      .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`),
  ];
  const id = line.request_id ? ` [${line.request_id}]` : "";
  return `${time} ${level} ${parts.join(" ")}${id}`;
}
