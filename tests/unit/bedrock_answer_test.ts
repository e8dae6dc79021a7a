/** @module Bedrock's answers read as the Anthropic API's: event stream to SSE, exceptions, and the error table. */
import assert from "node:assert/strict";
import { bedrockAnswer } from "../../src/providers/bedrock_answer.ts";
import { SseParser } from "../../src/core/sse.ts";
import { fixtureEvents } from "../_cloud_answers.ts";
import { bedrockError, bedrockEventFrames, bedrockExceptionFrame } from "../_fake_bedrock.ts";
import { fixture } from "../_helpers.ts";

/** A streamed Bedrock response whose body arrives `size` bytes at a time. */
function streamed(frames: Uint8Array[], size: number): Response {
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const frame of frames) {
    all.set(frame, at);
    at += frame.length;
  }
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < all.length; i += size) controller.enqueue(all.slice(i, i + size));
      controller.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/vnd.amazon.eventstream" },
  });
}

for (const size of [1, 7, 1 << 20]) {
  Deno.test(`bedrockAnswer() gives the Anthropic SSE of every event when frames arrive ${size} bytes at a time`, async () => {
    const res = await bedrockAnswer(streamed(bedrockEventFrames(fixtureEvents("anthropic/tool_use.sse")), size), true);
    assert.equal(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
    const got = new SseParser().push(await res.text());
    const want = new SseParser().push(fixture("anthropic/tool_use.sse"));
    assert.deepEqual(got.map((m) => m.event), want.map((m) => m.event));
    // The data is the event as Anthropic sends it: Bedrock's metrics on the last event are gone.
    assert.deepEqual(got.map((m) => JSON.parse(m.data)), want.map((m) => JSON.parse(m.data)));
  });
}

const EXCEPTIONS = [
  { exception: "throttlingException", type: "rate_limit_error" },
  { exception: "serviceUnavailableException", type: "overloaded_error" },
  { exception: "modelStreamErrorException", type: "api_error" },
  { exception: "internalServerException", type: "api_error" },
  { exception: "validationException", type: "invalid_request_error" },
  { exception: "modelTimeoutException", type: "timeout_error" },
];
for (const c of EXCEPTIONS) {
  Deno.test(`bedrockAnswer() turns a ${c.exception} frame into an Anthropic error event of ${c.type}`, async () => {
    const events = fixtureEvents("anthropic/text.sse").slice(0, 3);
    const frames = [...bedrockEventFrames(events), bedrockExceptionFrame(c.exception, "Something went wrong")];
    const got = new SseParser().push(await (await bedrockAnswer(streamed(frames, 5), true)).text());
    assert.deepEqual(got.map((m) => m.event), ["message_start", "content_block_start", "ping", "error"]);
    assert.deepEqual(JSON.parse(got[3].data), {
      type: "error",
      error: { type: c.type, message: "Something went wrong" },
    });
  });
}

Deno.test("bedrockAnswer() fails the stream when a frame's checksum is wrong", async () => {
  const frames = bedrockEventFrames(fixtureEvents("anthropic/text.sse"));
  frames[1][frames[1].length - 10] ^= 0xff;
  const res = await bedrockAnswer(streamed(frames, 64), true);
  await assert.rejects(() => res.text(), { name: "SyntaxError", message: /checksum/ });
});

Deno.test("bedrockAnswer() fails the stream when it ends inside a frame", async () => {
  const frames = bedrockEventFrames(fixtureEvents("anthropic/text.sse"));
  const last = frames.length - 1;
  frames[last] = frames[last].slice(0, 20);
  const res = await bedrockAnswer(streamed(frames, 64), true);
  await assert.rejects(() => res.text(), { message: /ended inside a frame/ });
});

const ERRORS = [
  { error: "ThrottlingException", status: 429, want: [429, "rate_limit_error"] },
  { error: "ServiceUnavailableException", status: 503, want: [529, "overloaded_error"] },
  { error: "ValidationException", status: 400, want: [400, "invalid_request_error"] },
  { error: "AccessDeniedException", status: 403, want: [403, "permission_error"] },
  { error: "UnrecognizedClientException", status: 403, want: [403, "permission_error"] },
  { error: "InvalidSignatureException", status: 403, want: [403, "permission_error"] },
  { error: "ExpiredTokenException", status: 403, want: [403, "permission_error"] },
  { error: "ResourceNotFoundException", status: 404, want: [502, "api_error"] },
  { error: "ModelTimeoutException", status: 408, want: [504, "timeout_error"] },
  { error: "ModelErrorException", status: 424, want: [502, "api_error"] },
  { error: "InternalServerException", status: 500, want: [500, "api_error"] },
  { error: "ServiceQuotaExceededException", status: 400, want: [429, "rate_limit_error"] },
  { error: "SomethingNewException", status: 503, want: [503, "api_error"] },
] as const;
for (const c of ERRORS) {
  Deno.test(`bedrockAnswer() answers Bedrock's ${c.error} (${c.status}) as ${c.want.join(" ")}`, async () => {
    const res = await bedrockAnswer(bedrockError(c.error, c.status, `Bedrock says ${c.error}`), false);
    assert.equal(res.status, c.want[0]);
    assert.deepEqual(await res.json(), {
      type: "error",
      error: { type: c.want[1], message: `Bedrock says ${c.error}` },
    });
  });
}

Deno.test("bedrockAnswer() passes a successful JSON answer as it came", async () => {
  const original = Response.json({ id: "msg_1", type: "message" });
  assert.equal(await bedrockAnswer(original, false), original);
});
