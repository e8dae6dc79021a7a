/**
 * @module One request's record as it passes through the gateway (who, which model, which upstream, how it
 * ended, what it used), and the observers that consume it: logs, metrics, usage accounting and limits.
 */
import type { GuardHit } from "./text_scan.ts";
import type { Price } from "./money.ts";
import type { Principal } from "./principal.ts";
import type { JsonObject, ServedProtocol } from "./types.ts";
import type { UpstreamConfig } from "./upstream_config.ts";

/** Token counts as the upstream reported them; prompt total = input + cache_read + cache_creation. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Of `output_tokens`, those the model spent reasoning, when the upstream says (OpenAI, Gemini); absent for none. */
  reasoning_output_tokens?: number;
}

/** One upstream attempt: which upstream, and how it ended ("ok" or an error kind). */
export interface Attempt {
  upstream: string;
  outcome: string;
  status?: number;
  /** The upstream's own id for the request, when it gave one: what its provider's support asks for. */
  request_id?: string;
}

/** How a request reached the gateway: its own HTTP request, or a `response.create` message on a Responses socket. */
export type Transport = "http" | "websocket";

/** Everything known about one request; filled by the app and the relay, handed to observers at the end. */
export interface Exchange {
  request_id: string;
  /** Milliseconds since the epoch when the request arrived. */
  started_at: number;
  method: string;
  /** The endpoint's path pattern (never the raw path, which is client input). */
  route: string;
  protocol: ServedProtocol;
  token_id?: string;
  /** The person the token belongs to (its `owner`, an email), when it names one. */
  owner?: string;
  group?: string;
  model?: string;
  /** The `x-claude-code-session-id` header, when sent. */
  session_id?: string;
  stream: boolean;
  /** Set for a response made on a Responses socket; unset for an HTTP request. */
  transport?: Transport;
  /** The upstream that answered last, if any was tried; with `model`, the deployment that served the request. */
  upstream?: string;
  /** The price of the deployment that answered last; undefined when it has none (or none was tried). */
  price?: Price;
  /** How the request's session pin turned out: followed (`kept`), new (`made`) or `moved`; unset without one. */
  affinity?: "kept" | "made" | "moved";
  attempts: Attempt[];
  status: number;
  /** Milliseconds from arrival to the response's first byte. */
  ttfb_ms?: number;
  duration_ms?: number;
  usage?: Usage;
  /** False when a stream ended before its usage was final (cut, cancelled or failed). */
  usage_complete?: boolean;
  /** The error kind when the request failed, before or during the stream. */
  error?: string;
  /** Set when the gateway compacted the conversation: its summary call is part of this request's usage. */
  compaction?: "gateway";
  /** What the answer said of itself (its id, model and why it stopped), when it said it. */
  answer?: AnswerFacts;
  /** Set by the tracing observer at the start, only when tracing is on; the relay runs its calls under it. */
  trace?: ExchangeTrace;
  /** What a request to /mcp was and did; unset for the other routes. */
  mcp?: McpFacts;
  /** What an embeddings request asked for (never its text); unset for the other routes. */
  embeddings?: EmbeddingFacts;
  /** The guardrails' hits: per rule, kind, action and scope, how many matches (never the matched text). */
  guardrails?: GuardHit[];
}

/** One embeddings request: how many inputs, and the vector length it asked for. */
export interface EmbeddingFacts {
  inputs: number;
  dimensions?: number;
}

/** One request to the gateway's MCP endpoint: the method, and for a call the server and what it called there. */
export interface McpFacts {
  /** The JSON-RPC method (`tools/call`, `tools/list`, ...); `session/delete` for the end of a session. */
  method: string;
  /** The server a call went to, by its configured name. */
  server?: string;
  /** The tool or prompt called, under the server's own name. */
  name?: string;
  /** The client's session (the gateway's MCP session id). */
  session?: string;
  /** Bytes of the client's request body, and of the answer the gateway sent back for it. */
  request_bytes?: number;
  response_bytes?: number;
  /** How a call ended: `ok`, `tool_error` (the tool reported a failure), or the JSON-RPC error code it got. */
  outcome?: string;
}

/** The upstream's own account of an answer, as far as it gave one. */
export interface AnswerFacts {
  id?: string;
  model?: string;
  finish_reasons?: string[];
}

/**
 * The spans of one request. The relay runs the model call and each upstream attempt through it, so each attempt's
 * fetch (and the `traceparent` it sends) happens inside the attempt's span; the spans end with the exchange.
 */
export interface ExchangeTrace {
  /** The ids the request's log line carries. */
  readonly traceId: string;
  readonly spanId: string;
  /** Runs the model call, with its span begun; `body` is read at once for the request's settings and not kept. */
  call<T>(body: JsonObject, run: () => Promise<T>): Promise<T>;
  /** Runs one attempt under its own span; the served attempt's span stays open until the exchange ends. */
  attempt<T>(upstream: UpstreamConfig, passthrough: boolean, run: () => Promise<T>): Promise<T>;
  /** Ends the running attempt's span with how it went (the served one only marks it). */
  attempted(attempt: Attempt): void;
  /** The relay waits out an upstream's retry-after before the next attempt. */
  waiting(ms: number): void;
  /** A whole answer that will be served, in the upstream's protocol (read at once, not kept). */
  answered(body: JsonObject): void;
  /** Runs one call through /mcp to a server under its span (the MCP conventions' client span). */
  mcp?<T extends McpAnswer>(call: McpCallTrace, run: () => Promise<T>): Promise<T>;
}

/** One call through /mcp as its span describes it. */
export interface McpCallTrace {
  /** tools/call, prompts/get or resources/read. */
  method: string;
  server: string;
  /** The tool or prompt, under its own name; for resources/read, the resource's own URI. */
  target: string;
  /** The JSON-RPC id the client gave the request. */
  requestId: string | number;
  /** The client's session with the gateway. */
  session: string;
  /** How the gateway reaches the server. */
  transport: "http" | "stdio";
  /** The request's params (a tool's arguments among them), read only when content is captured. */
  params: JsonObject;
  /** Takes the servers' credentials out of content put on the span, as out of what reaches a client. */
  redact(text: string): string;
}

/** What a server answered a call with, as the span reads it. */
export interface McpAnswer {
  result?: JsonObject;
  error?: { code: number; message: string };
}

/** Something that watches exchanges and never refuses one. Every method is optional. */
export interface Observer {
  /** When the request arrives. */
  start?(exchange: Exchange): void;
  /** Once, when the response has been sent in full, cut, or cancelled by the client. */
  finish?(exchange: Exchange): void;
}

/** Something that may refuse a request once its caller and body are known, before any upstream call: the limits. */
export interface Guard {
  /** Throws a GatewayError (such as a 429) to refuse the request; returns to let it go on. */
  check(exchange: Exchange, body: JsonObject, principal: Principal): Promise<void> | void;
}
