/**
 * @module The Bedrock and Vertex transports on their own, over real HTTP against the fake clouds: what goes on the
 * wire (signature, path, body, betas, token) and how a refused token or a refused count is handled.
 */
import assert from "node:assert/strict";
import { BEDROCK_BETAS, type BedrockAuth, bedrockTransport } from "../../src/providers/bedrock.ts";
import { parseServiceAccount, serviceAccountTokens } from "../../src/providers/google_token.ts";
import type { TransportCall } from "../../src/providers/transport.ts";
import { VERTEX_BETAS, vertexTransport } from "../../src/providers/vertex.ts";
import { BEDROCK_CREDENTIALS, fakeBedrock } from "../_fake_bedrock.ts";
import { fakeVertex } from "../_fake_vertex.ts";

function call(extra: Partial<TransportCall> = {}): TransportCall {
  return {
    operation: "generate",
    upstreamModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    body: {
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      max_tokens: 8,
      messages: [{ role: "user", content: "Hi" }],
    },
    clientHeaders: new Headers(),
    search: "",
    requestId: "req_test",
    signal: new AbortController().signal,
    ...extra,
  };
}

function bedrockFor(url: string, auth: BedrockAuth, logs: Record<string, unknown>[] = []) {
  return bedrockTransport(
    { name: "bedrock", baseUrl: url, region: "us-east-1", betas: BEDROCK_BETAS, auth },
    { fetch, now: () => new Date(), log: (line) => logs.push(line) },
  );
}

Deno.test("bedrockTransport() signs for service bedrock, encodes the model id once on the wire, reshapes the body", async () => {
  await using bedrock = fakeBedrock();
  const logs: Record<string, unknown>[] = [];
  const transport = bedrockFor(bedrock.url, { kind: "sigv4", credentials: BEDROCK_CREDENTIALS }, logs);
  const headers = new Headers({ "anthropic-beta": "interleaved-thinking-2025-05-14,claude-code-20250219" });
  const res = await transport.send(call({ clientHeaders: headers }));
  assert.equal(res.status, 200);
  assert.equal((await res.json()).type, "message");
  const [seen] = bedrock.requests;
  assert.equal(seen.rawPath, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke");
  assert.equal(seen.model, "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
  assert.equal(seen.auth, "sigv4");
  assert.deepEqual(seen.body, {
    max_tokens: 8,
    messages: [{ role: "user", content: "Hi" }],
    anthropic_version: "bedrock-2023-05-31",
    anthropic_beta: ["interleaved-thinking-2025-05-14"],
  });
  assert.deepEqual(logs, [{ request_id: "req_test", event: "betas_dropped", upstream: "bedrock", count: 1 }]);
  assert.deepEqual(bedrock.refused, []);
});

Deno.test("bedrockTransport() signs an application inference profile ARN as one path segment", async () => {
  await using bedrock = fakeBedrock();
  const transport = bedrockFor(bedrock.url, { kind: "sigv4", credentials: BEDROCK_CREDENTIALS });
  const arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123";
  const res = await transport.send(call({ upstreamModel: arn, body: { ...call().body, stream: true } }));
  assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
  await res.body?.cancel();
  assert.equal(bedrock.requests[0].model, arn);
  assert.equal(bedrock.requests[0].action, "invoke-with-response-stream");
});

Deno.test("bedrockTransport() refused by Bedrock for a wrong secret answers 403, the gateway's credentials", async () => {
  await using bedrock = fakeBedrock();
  const credentials = { ...BEDROCK_CREDENTIALS, secretAccessKey: "not-the-secret" };
  const res = await bedrockFor(bedrock.url, { kind: "sigv4", credentials }).send(call());
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.type, "permission_error");
  assert.deepEqual(bedrock.refused, ["InvalidSignatureException: mismatch"]);
});

Deno.test("bedrockTransport() sends a Bedrock API key as a bearer token instead of signing", async () => {
  await using bedrock = fakeBedrock({ apiKey: "bedrock-api-key-123" });
  const res = await bedrockFor(bedrock.url, { kind: "api_key", apiKey: "bedrock-api-key-123" }).send(call());
  assert.equal(res.status, 200);
  await res.body?.cancel();
  assert.equal(bedrock.requests[0].auth, "bearer");
  assert.equal(bedrock.requests[0].headers.get("x-amz-date"), null);
});

Deno.test("bedrockTransport() counts tokens with CountTokens on the model behind an inference profile", async () => {
  await using bedrock = fakeBedrock();
  bedrock.answer = () => ({ json: {}, inputTokens: 321 });
  const { max_tokens: _, ...body } = call().body;
  const res = await bedrockFor(bedrock.url, { kind: "sigv4", credentials: BEDROCK_CREDENTIALS })
    .send(call({ operation: "count_tokens", body }));
  assert.deepEqual(await res.json(), { input_tokens: 321 });
  assert.equal(bedrock.requests[0].model, "anthropic.claude-sonnet-4-5-20250929-v1:0");
  assert.equal(bedrock.requests[0].body.anthropic_version, "bedrock-2023-05-31");
});

Deno.test("bedrockTransport() estimates, flagged, when Bedrock will not count for the model", async () => {
  await using bedrock = fakeBedrock();
  bedrock.answer = () => ({
    error: "ValidationException",
    status: 400,
    message: "The provided model doesn't support counting tokens",
  });
  const logs: Record<string, unknown>[] = [];
  const res = await bedrockFor(bedrock.url, { kind: "sigv4", credentials: BEDROCK_CREDENTIALS }, logs)
    .send(call({ operation: "count_tokens" }));
  const counted = await res.json();
  assert.equal(counted.estimated, true);
  assert.ok(counted.input_tokens > 0);
  assert.equal(logs[0].event, "count_tokens_estimated");
});

async function vertexFor(options: { expiresIn?: number } = {}) {
  const vertex = await fakeVertex(options);
  const logs: Record<string, unknown>[] = [];
  const account = parseServiceAccount(await Deno.readTextFile(vertex.credentialsFile));
  const tokens = serviceAccountTokens(account, { fetch, now: Date.now });
  const transport = vertexTransport(
    {
      name: "vertex",
      baseUrl: vertex.url,
      project: vertex.project,
      region: vertex.region,
      betas: VERTEX_BETAS,
      tokens,
      privateKey: account.private_key,
    },
    { fetch, log: (line) => logs.push(line) },
  );
  return { vertex, transport, logs };
}

const VERTEX_MODEL = "claude-sonnet-4-5@20250929";

Deno.test("vertexTransport() posts rawPredict with a fresh token, Vertex's version and accepted betas only", async () => {
  const { vertex, transport } = await vertexFor();
  await using _ = vertex;
  const headers = new Headers({ "anthropic-beta": "context-1m-2025-08-07, web-search-2025-03-05" });
  const res = await transport.send(
    call({ upstreamModel: VERTEX_MODEL, body: { ...call().body, model: VERTEX_MODEL }, clientHeaders: headers }),
  );
  assert.equal(res.status, 200);
  await res.body?.cancel();
  const [seen] = vertex.requests;
  assert.equal(seen.action, "rawPredict");
  assert.equal(seen.model, VERTEX_MODEL);
  assert.equal(seen.headers.get("anthropic-beta"), "context-1m-2025-08-07");
  assert.equal(seen.body.anthropic_version, "vertex-2023-10-16");
  assert.equal("model" in seen.body, false);
  assert.equal(vertex.grants.length, 1);
});

Deno.test("vertexTransport() after a 401 gets a new token and retries once; a second 401 is the answer", async () => {
  const { vertex, transport, logs } = await vertexFor();
  await using _ = vertex;
  const first = await transport.send(call({ upstreamModel: VERTEX_MODEL }));
  await first.body?.cancel();
  vertex.revoke(vertex.requests[0].token);
  const second = await transport.send(call({ upstreamModel: VERTEX_MODEL }));
  assert.equal(second.status, 200);
  await second.body?.cancel();
  assert.equal(vertex.grants.length, 2);
  assert.deepEqual(vertex.refusedTokens, ["ya29.fake-token-1"]);
  assert.equal(logs.filter((l) => l.event === "token_refused").length, 1);
});

Deno.test("vertexTransport() after a second 401 stops: the answer is a 403, the gateway's credentials at fault", async () => {
  const { vertex, transport } = await vertexFor();
  await using _ = vertex;
  vertex.refuseAllTokens = true;
  const res = await transport.send(call({ upstreamModel: VERTEX_MODEL }));
  assert.equal(res.status, 403);
  assert.equal((await res.json()).error.type, "permission_error");
  assert.equal(vertex.grants.length, 2, "one token, then exactly one fresh one");
  assert.equal(vertex.refusedTokens.length, 2);
});

Deno.test("vertexTransport() counts tokens at count-tokens:rawPredict with the model in the body", async () => {
  const { vertex, transport } = await vertexFor();
  await using _ = vertex;
  vertex.answer = () => ({ json: {}, inputTokens: 77 });
  const res = await transport.send(call({ operation: "count_tokens", upstreamModel: VERTEX_MODEL }));
  assert.deepEqual(await res.json(), { input_tokens: 77 });
  assert.equal(vertex.requests[0].action, "count-tokens");
  assert.equal(vertex.requests[0].model, VERTEX_MODEL);
});

Deno.test("vertexTransport() reports a failing token endpoint as the upstream's fault, naming only the OAuth code", async () => {
  const { vertex, transport } = await vertexFor();
  await using _ = vertex;
  vertex.tokenFailure = { status: 400, error: "invalid_grant" };
  await assert.rejects(
    () => transport.send(call({ upstreamModel: VERTEX_MODEL })),
    (err: Error & { kind?: string }) => {
      assert.equal(err.kind, "upstream");
      assert.equal(
        err.message,
        'Upstream "vertex" could not get an access token: The token endpoint answered 400 (invalid_grant)',
      );
      assert.ok(!err.message.includes(vertex.privateKey.slice(40, 80)));
      return true;
    },
  );
});
