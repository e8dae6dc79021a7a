/**
 * @module JSON nested past the limit: a 400 naming the depth, in the client's protocol, before anything goes upstream
 * or is stored, on every route that reads a JSON body and on the Responses socket; a body at the limit is served.
 */
import assert from "node:assert/strict";
import { MAX_JSON_DEPTH } from "../../src/core/json_depth.ts";
import { chatCompletion, fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { geminiCall } from "../_gemini_reader.ts";
import { anthropicMessage, fixture, startGateway, waitFor } from "../_helpers.ts";
import { storedKeys } from "../_responses.ts";
import { postMcp, startMcpGateway } from "../_mcp_gateway.ts";
import { create, openSocket } from "../_socket.ts";

/** A value whose arrays nest `levels` deep, a string at the bottom. */
function nested(levels: number): unknown {
  let value: unknown = "[not a bracket]";
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** A Gemini tool schema that nests `levels` deep: objects of properties, each level of them two. */
function deepSchema(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = levels % 2 ? { type: "STRING" } : { type: "ARRAY", items: { type: "STRING" } };
  for (let i = 0; i < Math.floor((levels - 1) / 2); i++) schema = { type: "OBJECT", properties: { a: schema } };
  return schema;
}

/** Each route and a body whose deepest value sits `extra` levels under the body's own object. */
const ROUTES: Array<{ path: string; body(extra: number): unknown }> = [
  {
    path: "/v1/messages",
    body: (extra) => ({
      model: "claude-test",
      max_tokens: 5,
      messages: [{ role: "user", content: "Hi" }],
      metadata: { user_id: "u", x: nested(extra - 2) },
    }),
  },
  {
    path: "/v1/messages/count_tokens",
    body: (extra) => ({ model: "claude-test", messages: [{ role: "user", content: "Hi" }], x: nested(extra - 1) }),
  },
  {
    path: "/v1/chat/completions",
    body: (extra) => ({ model: "gpt-test", messages: [{ role: "user", content: "Hi" }], x: nested(extra - 1) }),
  },
  ...["/v1/responses", "/v1/responses/compact"].map((path) => ({
    path,
    body: (extra: number) => ({
      model: "claude-test",
      input: [{ role: "user", content: [{ type: "input_text", text: "Hi", x: nested(extra - 5) }] }],
    }),
  })),
  {
    path: "/v1beta/models/claude-test:generateContent",
    body: (extra) => ({
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      tools: [{ functionDeclarations: [{ name: "f", parameters: deepSchema(extra - 5) }] }],
    }),
  },
];

/** How deep a value's arrays and objects nest, walked without recursion (a deep value would end the stack). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const open: Array<[unknown, number]> = [[value, 1]];
  for (let next = open.pop(); next; next = open.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== "object") continue;
    deepest = Math.max(deepest, depth);
    for (const child of Object.values(node)) open.push([child, depth + 1]);
  }
  return deepest;
}

for (const route of ROUTES) {
  Deno.test(`POST ${route.path} nested past ${MAX_JSON_DEPTH} levels is a 400 naming the depth, before any upstream call`, async () => {
    await using upstream = fakeUpstream();
    upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
    upstream.routes.set("POST /anth/v1/messages/count_tokens", () => jsonReply({ input_tokens: 3 }));
    upstream.routes.set("POST /oai/v1/chat/completions", () => jsonReply(chatCompletion()));
    await using gw = await startGateway(upstream.url);
    const call = (body: unknown) =>
      route.path.startsWith("/v1beta")
        ? geminiCall(gw, route.path, body, { "x-goog-api-key": gw.tokens.oa })
        : gw.post(route.path, body, { "x-api-key": gw.tokens.oa });
    for (const extra of [MAX_JSON_DEPTH + 1, 10_000]) {
      const body = route.body(extra);
      assert.equal(depthOf(body), extra, "the body nests as meant");
      const res = await call(body);
      const text = await res.text();
      assert.equal(res.status, 400, text.slice(0, 300));
      assert.match(JSON.parse(text).error.message, new RegExp(`more than ${MAX_JSON_DEPTH} levels deep`));
    }
    assert.equal(upstream.requests.length, 0, "nothing went upstream");
    assert.ok(!gw.exchanges.some((e) => e.usage), "nothing was counted");
    const atLimit = await call(route.body(MAX_JSON_DEPTH));
    assert.equal(atLimit.status, 200, (await atLimit.text()).slice(0, 300));
  });
}

Deno.test("a Responses body nested past the limit is refused, not answered 200 with an id that is never stored", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const input = [{ role: "user", content: nested(10_000) }];
  const res = await gw.post("/v1/responses", { model: "claude-test", input }, { "x-api-key": gw.tokens.oa });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error.type, "invalid_request_error");
  const tokenId = (await gw.store.findToken(gw.tokens.oa))!.id;
  assert.deepEqual(await storedKeys(gw.store.kv, tokenId), []);
  assert.equal(upstream.requests.length, 0);
});

Deno.test("a socket message nested past the limit gets an error event naming the depth; the socket goes on", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url);
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create({ input: [{ role: "user", content: nested(10_000) }] }));
  const event = await socket.next();
  assert.equal(event.type, "error");
  assert.equal(event.status, 400);
  // Refused as the socket takes it in, before it is parsed or served as a request.
  const message = (event.error as { message: string }).message;
  assert.match(message, new RegExp(`^Message nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`));
  assert.equal(upstream.requests.length, 0);
  socket.send(create());
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
  const turns = () => gw.exchanges.filter((e) => e.route === "/v1/responses" && e.method === "POST");
  const served = await waitFor(() => turns().length > 0 ? turns() : undefined);
  assert.deepEqual(served.map((e) => e.status), [200], "the deep message was never a request");
});

Deno.test("an MCP message nested past the limit is a JSON-RPC 400 naming the depth, and no server is asked", async () => {
  await using mcp = await startMcpGateway();
  const auth = { authorization: `Bearer ${mcp.tokens.all}` };
  const init = await postMcp(mcp.gateway.url, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  }, auth);
  const session = {
    ...auth,
    "mcp-session-id": init.headers.get("mcp-session-id")!,
    "mcp-protocol-version": "2025-06-18",
  };
  const call = (extra: number) =>
    postMcp(mcp.gateway.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "docs_search", arguments: { query: "q", x: nested(extra - 3) } },
    }, session);
  for (const extra of [MAX_JSON_DEPTH + 1, 10_000]) {
    const res = await call(extra);
    assert.equal(res.status, 400, JSON.stringify(res.body).slice(0, 300));
    assert.equal(res.body.error.code, -32600);
    assert.match(res.body.error.message, new RegExp(`more than ${MAX_JSON_DEPTH} levels deep`));
  }
  assert.deepEqual(mcp.docs.seen.filter((s) => s.startsWith("tools/call")), []);
  const atLimit = await call(MAX_JSON_DEPTH);
  assert.equal(atLimit.status, 200, JSON.stringify(atLimit.body).slice(0, 300));
  assert.deepEqual(mcp.docs.seen.filter((s) => s.startsWith("tools/call")), ["tools/call search"]);
});
