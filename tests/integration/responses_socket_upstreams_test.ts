/**
 * @module Responses over a WebSocket on every upstream kind: Bedrock and Vertex as Anthropic and chat upstreams are,
 * failover to another deployment before the first event, and the bound of the socket's memory.
 */
import assert from "node:assert/strict";
import { startClouds } from "../_clouds.ts";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { fixture, startGateway } from "../_helpers.ts";
import { openSocket } from "../_socket.ts";

const create = (model: string, extra: Record<string, unknown> = {}) => ({
  type: "response.create",
  model,
  input: "Hi",
  store: false,
  ...extra,
});

Deno.test("a socket serves Bedrock and Vertex models, and fails over before the first event", async () => {
  await using clouds = await startClouds();
  clouds.anthropic.routes.set("POST /first/v1/messages", () => jsonReply({ error: "down" }, 500));
  await using socket = await openSocket(clouds.gw.url, { authorization: `Bearer ${clouds.token}` });
  for (const model of ["claude-bedrock", "claude-vertex", "claude-both"]) {
    socket.send(create(model));
    const events = await socket.until("response.completed", "error");
    assert.equal(events.at(-1)!.type, "response.completed", model);
    assert.equal(events[0].type, "response.created");
  }
  assert.equal(clouds.bedrock.requests[0].action, "invoke-with-response-stream");
  assert.equal(clouds.vertex.requests.length, 1);
  const both = clouds.gw.exchanges.find((e) => e.model === "claude-both")!;
  assert.deepEqual(both.attempts.map((a) => [a.upstream, a.outcome]), [["first", "upstream"], ["bedrock", "ok"]]);
  assert.equal(both.transport, "websocket");
});

Deno.test("a response larger than the socket's memory cannot be continued under store: false", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { extraYaml: "responses_socket: { memory_bytes: 2048 }" });
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.tokens.default}` });
  socket.send(create("claude-test", { input: "x".repeat(4096) }));
  const big = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  socket.send(create("claude-test", { previous_response_id: big.id, input: "next" }));
  const refused = await socket.next();
  assert.equal((refused.error as { code: string }).code, "previous_response_not_found");
  socket.send(create("claude-test", { input: "small" }));
  const small = (await socket.until("response.completed")).at(-1)!.response as { id: string };
  socket.send(create("claude-test", { previous_response_id: small.id, input: "next" }));
  assert.equal((await socket.until("response.completed")).at(-1)!.type, "response.completed");
});
