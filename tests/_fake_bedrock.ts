/**
 * @module A fake Amazon Bedrock Runtime on 127.0.0.1 port 0 that checks what the real one checks: a SigV4 signature
 * made with its secret for service "bedrock" in its region within five minutes of its clock (or its API key as a
 * bearer token), `anthropic_version: "bedrock-2023-05-31"`, no `model` or `stream` in the body, known betas only.
 * It answers Messages JSON, AWS event-stream frames each carrying one Anthropic event, or Bedrock's own errors; its
 * embedding models (Titan, Cohere) take and answer their own bodies (_fake_embeddings.ts).
 */
import { type AwsCredentials, canonicalRequest, signatureOf } from "../src/providers/aws_sigv4.ts";
import { encodeFrame } from "../src/providers/aws_eventstream.ts";
import { type CloudAnswer, defaultAnswer, type StreamAnswer } from "./_cloud_answers.ts";
import { bedrockEmbedding, isBedrockEmbedding } from "./_fake_embeddings.ts";

/** A request as the fake saw it, once it passed the checks. */
export interface BedrockRequest {
  /** `invoke`, `invoke-with-response-stream` or `count-tokens`. */
  action: string;
  /** The model id, decoded from the path. */
  model: string;
  /** The path as it arrived (the model id percent-encoded). */
  rawPath: string;
  headers: Headers;
  body: Record<string, unknown>;
  /** How it was authorized. */
  auth: "sigv4" | "bearer";
}

/** What the fake accepts and how it answers. */
export interface FakeBedrockOptions {
  region?: string;
  credentials?: AwsCredentials;
  /** A Bedrock API key it also accepts as `Authorization: Bearer`. */
  apiKey?: string;
  /** Betas it accepts in `anthropic_beta`; others get 400 "invalid beta flag". */
  betas?: string[];
  now?(): number;
}

/** A running fake Bedrock. */
export interface FakeBedrock extends AsyncDisposable {
  url: string;
  credentials: AwsCredentials;
  region: string;
  /** Requests that passed authentication, in order. */
  requests: BedrockRequest[];
  /** Requests refused for their signature or key, by reason. */
  refused: string[];
  /** The answer to each authenticated request; defaults to the text fixture. */
  answer: (seen: BedrockRequest) => CloudAnswer;
}

/** Example credentials in AWS's documented shape. */
export const BEDROCK_CREDENTIALS: AwsCredentials = {
  accessKeyId: "AKIAFAKEBEDROCK0001",
  secretAccessKey: "fake/bedrock/secret/0123456789abcdefghijklmn",
  sessionToken: "FwoGZXIvYXdzEFAKESESSIONTOKEN",
};

const MAX_SKEW_MS = 5 * 60_000;
const encoder = new TextEncoder();
const PATH = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|count-tokens)$/;

/** A Bedrock error answer: its type goes in `x-amzn-ErrorType`, its message in the body. */
export function bedrockError(
  type: string,
  status: number,
  message: string,
  headers?: Record<string, string>,
): Response {
  return Response.json({ message }, {
    status,
    headers: { "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...headers },
  });
}

/** Starts the fake. */
export function fakeBedrock(options: FakeBedrockOptions = {}): FakeBedrock {
  const region = options.region ?? "us-east-1";
  const credentials = options.credentials ?? BEDROCK_CREDENTIALS;
  const now = options.now ?? Date.now;
  const betas = new Set(options.betas ?? ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]);
  const fake: Omit<FakeBedrock, "url" | typeof Symbol.asyncDispose> = {
    credentials,
    region,
    requests: [],
    refused: [],
    answer: defaultAnswer,
  };

  async function authenticate(req: Request, raw: Uint8Array): Promise<string | undefined> {
    const authorization = req.headers.get("authorization") ?? "";
    if (options.apiKey && authorization === `Bearer ${options.apiKey}`) return undefined;
    const match = authorization.match(
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/,
    );
    if (!match) return "MissingAuthenticationTokenException";
    const [, keyId, day, scopeRegion, service, signedHeaders, signature] = match;
    if (keyId !== credentials.accessKeyId) return "UnrecognizedClientException";
    const stamp = req.headers.get("x-amz-date") ?? "";
    const date = new Date(stamp.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"));
    if (Number.isNaN(date.getTime()) || stamp.slice(0, 8) !== day) return "InvalidSignatureException: bad date";
    if (Math.abs(now() - date.getTime()) > MAX_SKEW_MS) return "InvalidSignatureException: Signature expired";
    if (service !== "bedrock" || scopeRegion !== region) return "InvalidSignatureException: wrong scope";
    const names = signedHeaders.split(";");
    if (!names.includes("host") || !names.includes("x-amz-date")) return "InvalidSignatureException: unsigned";
    if (credentials.sessionToken) {
      const token = req.headers.get("x-amz-security-token");
      if (token !== credentials.sessionToken || !names.includes("x-amz-security-token")) {
        return "UnrecognizedClientException: session token";
      }
    }
    const url = new URL(req.url);
    const canonical = await canonicalRequest({
      method: req.method,
      // The path exactly as sent: the signer must have encoded it once more than the wire.
      path: url.pathname,
      query: url.search.slice(1),
      headers: names.map((name) => [name, req.headers.get(name) ?? ""] as const),
      body: raw,
    });
    const expected = await signatureOf(canonical.text, { credentials, region, service: "bedrock", date });
    return expected.signature === signature ? undefined : "InvalidSignatureException: mismatch";
  }

  async function handle(req: Request): Promise<Response> {
    const raw = new Uint8Array(await req.arrayBuffer());
    const url = new URL(req.url);
    const route = url.pathname.match(PATH);
    if (req.method !== "POST" || !route) return bedrockError("UnknownOperationException", 404, "Unknown operation");
    const refusal = await authenticate(req, raw);
    if (refusal) {
      fake.refused.push(refusal);
      const [type] = refusal.split(":");
      return bedrockError(type, 403, "The request signature we calculated does not match the signature you provided");
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      return bedrockError(
        "ValidationException",
        400,
        "Malformed input request, please reformat your input and try again",
      );
    }
    const action = route[2];
    const model = decodeURIComponent(route[1]);
    // An embedding model takes its own body (Titan's or Cohere's) and answers its own.
    if (action === "invoke" && isBedrockEmbedding(model)) {
      fake.requests.push({ action, model, rawPath: url.pathname, headers: req.headers, body, auth: authOf(req) });
      return bedrockEmbedding(model, body);
    }
    const invoke = action === "count-tokens" ? countTokensInput(body) : body;
    const invalid = invoke === undefined ? "input.invokeModel.body is required" : checkInvokeBody(invoke, betas);
    if (invalid) return bedrockError("ValidationException", 400, invalid);
    const seen: BedrockRequest = {
      action,
      model,
      rawPath: url.pathname,
      headers: req.headers,
      body: invoke!,
      auth: authOf(req),
    };
    fake.requests.push(seen);
    return reply(fake.answer(seen), action);
  }

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handle);
  return Object.assign(fake, {
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  });
}

/** How a request that passed was authorized. */
function authOf(req: Request): "sigv4" | "bearer" {
  return req.headers.get("authorization")?.startsWith("Bearer ") ? "bearer" : "sigv4";
}

/** The InvokeModel body inside a CountTokens request, decoded from base64. */
function countTokensInput(body: Record<string, unknown>): Record<string, unknown> | undefined {
  const invoke = (body.input as { invokeModel?: { body?: unknown } } | undefined)?.invokeModel?.body;
  if (typeof invoke !== "string") return undefined;
  return JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(invoke)));
}

/** What Bedrock refuses in an Anthropic InvokeModel body, or undefined. */
function checkInvokeBody(body: Record<string, unknown>, betas: Set<string>): string | undefined {
  // Newer official SDKs send a dated version here, which the service takes as well.
  if (!/^(bedrock-2023-05-31|\d{4}-\d{2}-\d{2})$/.test(String(body.anthropic_version))) {
    return "anthropic_version: must be bedrock-2023-05-31";
  }
  for (const key of ["model", "stream"]) {
    if (key in body) return `#: extraneous key [${key}] is not permitted`;
  }
  if (typeof body.max_tokens !== "number") return "#: required key [max_tokens] not found";
  const beta = body.anthropic_beta;
  if (beta !== undefined && (!Array.isArray(beta) || beta.some((b) => typeof b !== "string" || !betas.has(b)))) {
    return "invalid beta flag";
  }
  return undefined;
}

/** The HTTP answer for a scripted outcome. */
function reply(answer: CloudAnswer, action: string): Response {
  if ("error" in answer) return bedrockError(answer.error, answer.status, answer.message, answer.headers);
  if ("json" in answer) {
    return Response.json(action === "count-tokens" ? { inputTokens: answer.inputTokens ?? 0 } : answer.json);
  }
  return eventStream(answer);
}

/** Event frames as Bedrock streams them: each event base64 in `bytes` beside a padding field, metrics on the last. */
export function bedrockEventFrames(events: Record<string, unknown>[]): Uint8Array[] {
  return events.map((event, i) => {
    const last = i === events.length - 1 && event.type === "message_stop";
    const data = last
      ? { ...event, "amazon-bedrock-invocationMetrics": { inputTokenCount: 12, outputTokenCount: 5 } }
      : event;
    const bytes = encoder.encode(JSON.stringify(data)).toBase64();
    return encodeFrame(
      { ":event-type": "chunk", ":content-type": "application/json", ":message-type": "event" },
      encoder.encode(JSON.stringify({ bytes, p: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ".slice(0, i % 20) })),
    );
  });
}

/** An exception frame, as Bedrock ends a stream that failed. */
export function bedrockExceptionFrame(type: string, message: string): Uint8Array {
  return encodeFrame(
    { ":exception-type": type, ":content-type": "application/json", ":message-type": "exception" },
    encoder.encode(JSON.stringify({ message })),
  );
}

/** A streamed answer: the frames, then an exception, a cut in the middle of a frame, or the end. */
function eventStream(answer: StreamAnswer): Response {
  const frames = bedrockEventFrames(answer.events);
  const exception = answer.exception;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      frames.slice(0, answer.cutAfter ?? exception?.after ?? frames.length).forEach((f) => controller.enqueue(f));
      if (answer.cutAfter !== undefined) {
        // The body ends in the middle of the next frame.
        const next = frames[answer.cutAfter];
        if (next) controller.enqueue(next.slice(0, next.length >> 1));
        return controller.close();
      }
      if (exception) controller.enqueue(bedrockExceptionFrame(exception.type, exception.message));
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "application/vnd.amazon.eventstream" } });
}
