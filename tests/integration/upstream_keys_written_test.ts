/**
 * @module Every configured upstream credential, whatever its shape (a Gemini `AIza...` key, keys without `sk-`),
 * stays out of everything the gateway writes down: its log lines, its request log, its metrics and the exchange
 * record its observers (traces among them) read, when an upstream echoes it where the gateway looks for the upstream's
 * request id (`request-id`, `x-request-id`, an error body's `request_id`), on answers and refusals, streamed and not.
 */
import assert from "node:assert/strict";
import { chatCompletion, fakeUpstream, type SeenRequest } from "../_fake_upstream.ts";
import { geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { anthropicMessage, readText, startGateway, type TestGateway } from "../_helpers.ts";
import { requestLog } from "../../src/usage/query.ts";

/** Keys as the providers shape them; none starts with `sk-`. */
const KEYS = {
  TEST_GEMINI_KEY: "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
  TEST_ANTHROPIC_KEY: "ant-echo-0123456789abcdefghij",
  TEST_OPENAI_KEY: "proj_echo.0123456789-abcdefghij",
};

/** The key an upstream was sent, whichever header carried it. */
function sentKey(seen: SeenRequest): string {
  const bearer = seen.headers.get("authorization")?.replace(/^Bearer /, "");
  return seen.headers.get("x-goog-api-key") ?? seen.headers.get("x-api-key") ?? bearer ?? "";
}

/** Where an upstream can echo the key so the gateway takes it for the upstream's request id. */
const ECHOES: { name: string; headers(key: string): Record<string, string>; inBody: boolean }[] = [
  { name: "request-id", headers: (key) => ({ "request-id": key }), inBody: false },
  { name: "x-request-id", headers: (key) => ({ "x-request-id": key }), inBody: false },
  { name: "an error body's request_id", headers: () => ({}), inBody: true },
];

const ROUTES: Record<string, { route: string; ok: () => unknown; stream: string }> = {
  "claude-test": {
    route: "POST /anth/v1/messages",
    ok: () => anthropicMessage(),
    stream: 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",' +
      '"role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,' +
      '"usage":{"input_tokens":5,"output_tokens":1}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n',
  },
  "gpt-test": {
    route: "POST /oai/v1/chat/completions",
    ok: () => chatCompletion(),
    stream: 'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,' +
      '"delta":{"content":"Hi"},"finish_reason":"stop"}],' +
      '"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}' +
      "\n\ndata: [DONE]\n\n",
  },
  "gemini-test": {
    route: "POST /gem/v1beta/models/gemini-test:",
    ok: () => ({
      candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, finishReason: "STOP" }],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    }),
    stream: 'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"finishReason":"STOP"}],' +
      '"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}}\r\n\r\n',
  },
};

/** Makes the model's upstream echo its key as `echo` says, answering well or refusing with a 429. */
function echoing(upstream: ReturnType<typeof fakeUpstream>, model: string, echo: typeof ECHOES[number], ok: boolean) {
  const { route, ok: body, stream } = ROUTES[model];
  const answer = (seen: SeenRequest) => {
    const key = sentKey(seen);
    const headers = echo.headers(key);
    if (!ok) {
      const refusal = {
        error: { type: "rate_limit_error", message: "slow down" },
        ...echo.inBody ? { request_id: key } : {},
      };
      return Response.json(refusal, { status: 429, headers });
    }
    if (seen.path.includes("stream") || seen.body?.stream === true) {
      return new Response(stream, { headers: { "content-type": "text/event-stream", ...headers } });
    }
    return Response.json(body(), { headers });
  };
  if (!route.endsWith(":")) upstream.routes.set(route, answer);
  else for (const action of ["generateContent", "streamGenerateContent"]) upstream.routes.set(route + action, answer);
}

function ask(gw: TestGateway & { token: string }, model: string, stream: boolean): Promise<Response> {
  if (model === "gemini-test") {
    const action = stream ? "streamGenerateContent?alt=sse" : "generateContent";
    const body = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
    return gw.post(`/v1beta/models/${model}:${action}`, body, { "x-goog-api-key": gw.token });
  }
  return gw.post("/v1/messages", { model, max_tokens: 16, stream, messages: [{ role: "user", content: "Hi" }] }, {
    "x-api-key": gw.token,
  });
}

Deno.test("an upstream key of any shape echoed as its request id is written to no log, request log or metric", async () => {
  await using upstream = fakeUpstream();
  const gemini = geminiUpstreamYaml(upstream.url);
  await using gw = await startGateway(upstream.url, {
    extraUpstreams: gemini.extraUpstreams,
    extraGroups: "  - { name: every, listing: anthropic, models: [claude-test, gpt-test, gemini-test] }\n",
    env: KEYS,
    routing: "max_attempts: 1",
    failureThreshold: 1000,
  }).then(async (gw) => Object.assign(gw, { token: (await gw.store.createToken({ group: "every" })).secret }));
  let requests = 0;
  let logged = 0;
  for (const echo of ECHOES) {
    for (const model of Object.keys(ROUTES)) {
      for (const ok of [true, false]) {
        if (ok && echo.inBody) continue;
        echoing(upstream, model, echo, ok);
        for (const stream of [false, true]) {
          const res = await ask(gw, model, stream);
          const text = await readText(res);
          assert.equal(res.status, ok ? 200 : 429, `${model} ${echo.name}: ${text}`);
          // The request log holds every model call, the Gemini API's generations among them.
          logged++;
          requests++;
        }
      }
    }
  }
  await gw.flush();
  const entries = await requestLog(gw.store.kv, { limit: 500 });
  assert.equal(entries.length, logged, "every request of those routes is in the request log");
  const page = await (await fetch(`${gw.url}/metrics`)).text();
  const logs = JSON.stringify(gw.logs);
  assert.equal(gw.logs.filter((line) => line.event === "request").length, requests, "every request was logged");
  for (const key of Object.values(KEYS)) {
    assert.ok(!logs.includes(key), `a log line holds ${key}`);
    assert.ok(!JSON.stringify(entries).includes(key), `the request log holds ${key}`);
    assert.ok(!page.includes(key), `the metrics hold ${key}`);
    // What every observer reads, the traces' exporter among them: each attempt's upstream request id.
    assert.ok(!JSON.stringify(gw.exchanges).includes(key), `an exchange record holds ${key}`);
  }
  // An id that is only an id is still kept.
  upstream.routes.set(
    ROUTES["claude-test"].route,
    () => Response.json(anthropicMessage(), { headers: { "request-id": "req_up_1" } }),
  );
  await readText(await ask(gw, "claude-test", false));
  const last = gw.logs.findLast((line) => line.event === "request") as { attempts: { request_id?: string }[] };
  assert.equal(last.attempts[0].request_id, "req_up_1");
});
