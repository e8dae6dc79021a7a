/**
 * @module A fake Google Vertex AI (Claude as a partner model) and its OAuth token endpoint on 127.0.0.1 port 0.
 * Like the real ones, the token endpoint takes a JWT-bearer grant only when the assertion is RS256-signed by the
 * service account's key with the right issuer, audience, scope and lifetime, and the model endpoints take only a
 * bearer token it issued that has not expired, a body with `anthropic_version: "vertex-2023-10-16"` and no
 * `model`, and known betas. A service-account key file for it is written to a temporary directory.
 */
import { type CloudAnswer, defaultAnswer } from "./_cloud_answers.ts";
import type { Responder } from "./_fake_upstream.ts";

/** A model request as the fake saw it, once it passed the checks. */
export interface VertexRequest {
  /** `rawPredict`, `streamRawPredict`, or `count-tokens` (the token-counting rawPredict). */
  action: string;
  model: string;
  project: string;
  region: string;
  token: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** What the fake accepts and how it answers. */
export interface FakeVertexOptions {
  project?: string;
  region?: string;
  /** Lifetime of issued tokens, in seconds. */
  expiresIn?: number;
  /** Betas it accepts in the `anthropic-beta` header; others get 400. */
  betas?: string[];
  now?(): number;
}

/** A running fake Vertex. */
export interface FakeVertex extends AsyncDisposable {
  url: string;
  project: string;
  region: string;
  /** Path of a service-account key file whose `token_uri` is this fake's token endpoint. */
  credentialsFile: string;
  /** The file's private key, which must never appear in a log or a response. */
  privateKey: string;
  /** Assertions the token endpoint accepted, decoded. */
  grants: { header: Record<string, unknown>; claims: Record<string, unknown> }[];
  /** Token requests it refused, with the reason. */
  refusedGrants: string[];
  /** Model requests it refused for their token. */
  refusedTokens: string[];
  requests: VertexRequest[];
  /** Makes an issued token invalid before its expiry, as a revoked one is. */
  revoke(token: string): void;
  /** The answer to each authorized model request; defaults to the text fixture. */
  answer: (seen: VertexRequest) => CloudAnswer;
  /** While true, every model request is refused as unauthenticated, as with a disabled service account. */
  refuseAllTokens?: boolean;
  /** Answers Gemini model requests (`publishers/google`) once their token passed; none: they are 404. */
  gemini?: Responder;
  /** A token-endpoint failure to give instead of a token, while set. */
  tokenFailure?: { status: number; error: string };
}

export const CLIENT_EMAIL = "modelgate-test@fake-project.iam.gserviceaccount.com";
const KEY_ID = "fake-key-id-0001";
const SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const MODEL_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;

const GEMINI_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens|predict)$/;

/** One RSA key for every fake in a test run: generating one takes a noticeable fraction of a second. */
const SERVICE_ACCOUNT_KEY = crypto.subtle.generateKey(
  { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
  true,
  ["sign", "verify"],
);

/** A Google-shaped error, as Google's front end sends for authentication and routing failures. */
function googleError(status: number, word: string, message: string, headers?: HeadersInit): Response {
  return Response.json({ error: { code: status, message, status: word } }, { status, headers });
}

/** An Anthropic-shaped error, as the model itself sends on Vertex. */
function anthropicError(status: number, type: string, message: string, headers?: HeadersInit): Response {
  return Response.json({ type: "error", error: { type, message } }, { status, headers });
}

function decodePart(part: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(part, { alphabet: "base64url" })));
}

/** Starts the fake and writes its key file. */
export async function fakeVertex(options: FakeVertexOptions = {}): Promise<FakeVertex> {
  const project = options.project ?? "fake-project";
  const region = options.region ?? "us-east5";
  const now = options.now ?? Date.now;
  const betas = new Set(options.betas ?? ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]);
  const keys = await SERVICE_ACCOUNT_KEY;
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const privateKey = `-----BEGIN PRIVATE KEY-----\n${
    der.toBase64().match(/.{1,64}/g)!.join("\n")
  }\n-----END PRIVATE KEY-----\n`;
  const issued = new Map<string, number>();
  let serial = 0;

  const fake = {
    project,
    region,
    grants: [],
    refusedGrants: [],
    refusedTokens: [],
    requests: [],
    revoke: (token: string) => void issued.delete(token),
    answer: defaultAnswer,
  } as unknown as FakeVertex;

  async function grant(req: Request, tokenUri: string): Promise<Response> {
    const form = new URLSearchParams(await req.text());
    const refuse = (reason: string) => {
      fake.refusedGrants.push(reason);
      return Response.json({ error: "invalid_grant", error_description: reason }, { status: 400 });
    };
    if (fake.tokenFailure) {
      return Response.json({ error: fake.tokenFailure.error }, { status: fake.tokenFailure.status });
    }
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") return refuse("grant_type");
    const parts = (form.get("assertion") ?? "").split(".");
    if (parts.length !== 3) return refuse("not a JWT");
    const header = decodePart(parts[0]);
    const claims = decodePart(parts[1]);
    const valid = await crypto.subtle.verify(
      "RSASSA-PKCS1-v1_5",
      keys.publicKey,
      Uint8Array.fromBase64(parts[2], { alphabet: "base64url" }),
      new TextEncoder().encode(`${parts[0]}.${parts[1]}`),
    );
    if (header.alg !== "RS256" || header.kid !== KEY_ID || !valid) return refuse("Invalid JWT Signature.");
    const seconds = now() / 1000;
    const { iat, exp } = claims as { iat: number; exp: number };
    if (claims.iss !== CLIENT_EMAIL || claims.aud !== tokenUri || claims.scope !== SCOPE) return refuse("claims");
    if (!(iat <= seconds + 60 && exp > seconds && exp - iat <= 3600)) return refuse("Invalid JWT: expired or too long");
    fake.grants.push({ header, claims });
    const token = `ya29.fake-token-${++serial}`;
    const expiresIn = options.expiresIn ?? 3600;
    issued.set(token, now() + expiresIn * 1000);
    return Response.json({ access_token: token, expires_in: expiresIn, token_type: "Bearer" });
  }

  async function predict(req: Request, url: URL): Promise<Response> {
    const match = url.pathname.match(MODEL_PATH) ?? (fake.gemini ? url.pathname.match(GEMINI_PATH) : null);
    if (!match) return googleError(404, "NOT_FOUND", "The requested URL was not found on this server.");
    const token = (req.headers.get("authorization") ?? "").replace(/^Bearer /, "");
    const expiry = issued.get(token);
    if (expiry === undefined || expiry <= now() || fake.refuseAllTokens) {
      fake.refusedTokens.push(token);
      return googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.");
    }
    const [, projectId, location, model, method] = match;
    if (projectId === project && location === region && GEMINI_PATH.test(url.pathname)) {
      const body = await req.json().catch(() => undefined);
      const seen = { method: "POST", path: url.pathname, search: url.search, headers: req.headers, body, raw: "" };
      return await fake.gemini!({ ...seen, closed: Promise.resolve() }, req);
    }
    if (projectId !== project || location !== region) {
      return googleError(403, "PERMISSION_DENIED", `Permission denied on resource project ${projectId}.`);
    }
    const body = await req.json().catch(() => undefined) as Record<string, unknown> | undefined;
    const counting = model === "count-tokens";
    // Newer official SDKs send a dated version here, which the service takes as well.
    if (!body || !/^(vertex-2023-10-16|\d{4}-\d{2}-\d{2})$/.test(String(body.anthropic_version))) {
      return anthropicError(400, "invalid_request_error", "anthropic_version: Input should be 'vertex-2023-10-16'");
    }
    if (counting !== ("model" in body)) {
      return anthropicError(
        400,
        "invalid_request_error",
        counting ? "model: Field required" : "model: Extra inputs are not permitted",
      );
    }
    if ((method === "streamRawPredict") !== (body.stream === true)) {
      return anthropicError(400, "invalid_request_error", "stream: must match the method");
    }
    const unknown = (req.headers.get("anthropic-beta") ?? "").split(",").map((b) => b.trim()).filter((b) =>
      b && !betas.has(b)
    );
    if (unknown.length > 0) {
      return anthropicError(
        400,
        "invalid_request_error",
        `Unexpected value(s) ${unknown.map((b) => `\`${b}\``).join(", ")} for the \`anthropic-beta\` header.`,
      );
    }
    const seen: VertexRequest = {
      action: counting ? "count-tokens" : method,
      model: counting ? String(body.model) : model,
      project: projectId,
      region: location,
      token,
      headers: req.headers,
      body,
    };
    fake.requests.push(seen);
    return reply(fake.answer(seen), seen.action);
  }

  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const url = new URL(req.url);
    const tokenUri = `${url.origin}/token`;
    if (req.method === "POST" && url.pathname === "/token") return grant(req, tokenUri);
    if (req.method === "POST") return predict(req, url);
    return googleError(405, "METHOD_NOT_ALLOWED", "Method not allowed");
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const dir = await Deno.makeTempDir({ prefix: "modelgate-vertex-" });
  const credentialsFile = `${dir}/service-account.json`;
  await Deno.writeTextFile(
    credentialsFile,
    JSON.stringify({
      type: "service_account",
      project_id: project,
      private_key_id: KEY_ID,
      private_key: privateKey,
      client_email: CLIENT_EMAIL,
      client_id: "100000000000000000001",
      token_uri: `${origin}/token`,
    }),
  );
  return Object.assign(fake, {
    url: origin,
    credentialsFile,
    privateKey,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  });
}

/** The HTTP answer for a scripted outcome: Anthropic JSON, Anthropic SSE, or the error as the model sends it. */
function reply(answer: CloudAnswer, action: string): Response {
  if ("error" in answer) {
    if (answer.google) return googleError(answer.status, answer.google, answer.message, answer.headers);
    return anthropicError(answer.status, answer.error, answer.message, answer.headers);
  }
  if ("json" in answer) {
    return Response.json(action === "count-tokens" ? { input_tokens: answer.inputTokens ?? 0 } : answer.json);
  }
  const encoder = new TextEncoder();
  const events = answer.events.map((event) =>
    encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
  );
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const stop = answer.cutAfter ?? answer.exception?.after ?? events.length;
      events.slice(0, stop).forEach((event) => controller.enqueue(event));
      if (answer.exception) {
        const { type, message } = answer.exception;
        controller.enqueue(
          encoder.encode(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type, message } })}\n\n`),
        );
      }
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8" } });
}
