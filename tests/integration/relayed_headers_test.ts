/**
 * @module The retry headers an upstream's refusal carries reach the client only in their own forms, so an upstream
 * that writes its key into one of them never gets it there: `x-should-retry` only as `true` or `false`,
 * `retry-after` only as seconds or an IMF-fixdate, `retry-after-ms` only as a number. Each header, streamed and not,
 * on the four client protocols (each passed through and translated), and in a Responses socket's `error` event.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, type SeenRequest } from "../_fake_upstream.ts";
import { GEMINI_KEY, geminiUpstreamYaml } from "../_gemini_upstream.ts";
import { readText, startGateway, type TestGateway, UPSTREAM_KEYS } from "../_helpers.ts";
import { create, openSocket } from "../_socket.ts";

/** The key an upstream was sent, whichever header carried it. */
function sentKey(seen: SeenRequest): string {
  const bearer = seen.headers.get("authorization")?.replace(/^Bearer /, "");
  return seen.headers.get("x-api-key") ?? seen.headers.get("x-goog-api-key") ?? bearer ?? "";
}

/** Each relayed header, a hostile value that quotes the key, and a well-formed value the client still gets. */
const HEADERS = [
  { name: "x-should-retry", hostile: (key: string) => `true ${key}`, good: "false" },
  { name: "x-should-retry", hostile: (key: string) => key, good: "true" },
  {
    name: "retry-after",
    hostile: (key: string) => `Tue, 01 Jan 2030 00:00:00 GMT (${key})`,
    good: "Wed, 21 Oct 2015 07:28:00 GMT",
  },
  { name: "retry-after", hostile: (key: string) => `${key}, 01 Jan 2030 00:00:00 GMT`, good: "7" },
  { name: "retry-after-ms", hostile: (key: string) => `1500 ${key}`, good: "1500" },
];

/** Each upstream's 429 in its own envelope. */
const REFUSALS: Record<string, { route: string; body: unknown }> = {
  anth: {
    route: "POST /anth/v1/messages",
    body: { type: "error", error: { type: "rate_limit_error", message: "slow down" } },
  },
  oai: {
    route: "POST /oai/v1/chat/completions",
    body: { error: { type: "rate_limit_error", code: "rate_limit_exceeded", message: "slow down" } },
  },
  gem: {
    route: "POST /gem/v1beta/models/gemini-test:",
    body: { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "slow down" } },
  },
};

/** A request of each client protocol, to a model passed through and to one translated, streamed or not. */
const CLIENTS = [
  { protocol: "anthropic", models: ["claude-test", "gpt-test"] },
  { protocol: "openai-chat", models: ["gpt-test", "claude-test"] },
  { protocol: "openai-responses", models: ["claude-test", "gpt-test"] },
  { protocol: "gemini", models: ["gemini-test", "claude-test"] },
];
const UPSTREAM_OF: Record<string, string> = { "claude-test": "anth", "gpt-test": "oai", "gemini-test": "gem" };

function ask(gw: TestGateway & { token: string }, protocol: string, model: string, stream: boolean) {
  const auth = { "x-api-key": gw.token };
  switch (protocol) {
    case "anthropic":
      return gw.post(
        "/v1/messages",
        { model, max_tokens: 16, stream, messages: [{ role: "user", content: "Hi" }] },
        auth,
      );
    case "openai-chat":
      return gw.post("/v1/chat/completions", { model, stream, messages: [{ role: "user", content: "Hi" }] }, auth);
    case "openai-responses":
      return gw.post("/v1/responses", { model, stream, input: "Hi", store: false }, auth);
    default: {
      const action = stream ? "streamGenerateContent?alt=sse" : "generateContent";
      const body = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
      return gw.post(`/v1beta/models/${model}:${action}`, body, { "x-goog-api-key": gw.token });
    }
  }
}

/** A gateway over every upstream kind above that tries each request once, and a token of a group with all models. */
async function gateway(url: string): Promise<TestGateway & { token: string }> {
  const gemini = geminiUpstreamYaml(url);
  const gw = await startGateway(url, {
    extraUpstreams: gemini.extraUpstreams,
    extraGroups: "  - { name: every, listing: anthropic, models: [claude-test, gpt-test, gemini-test] }\n",
    env: { TEST_GEMINI_KEY: GEMINI_KEY },
    routing: "max_attempts: 1",
    failureThreshold: 1000,
  });
  return Object.assign(gw, { token: (await gw.store.createToken({ group: "every" })).secret });
}

/** Makes every upstream refuse with a 429 whose `name` header is `value(key)`. */
function refuseWith(upstream: ReturnType<typeof fakeUpstream>, name: string, value: (key: string) => string): void {
  for (const { route, body } of Object.values(REFUSALS)) {
    const answer = (seen: SeenRequest) => jsonReply(body, 429, { [name]: value(sentKey(seen)) });
    if (!route.endsWith(":")) upstream.routes.set(route, answer);
    else for (const action of ["generateContent", "streamGenerateContent"]) upstream.routes.set(route + action, answer);
  }
}

const KEYS = [UPSTREAM_KEYS.TEST_ANTHROPIC_KEY, UPSTREAM_KEYS.TEST_OPENAI_KEY, GEMINI_KEY];

for (const { protocol, models } of CLIENTS) {
  Deno.test(`a ${protocol} client gets an upstream's retry headers only in their own forms, never a key`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await gateway(upstream.url);
    for (const header of HEADERS) {
      for (const [value, expected] of [[header.hostile, null], [() => header.good, header.good]] as const) {
        refuseWith(upstream, header.name, value);
        for (const model of models) {
          for (const stream of [false, true]) {
            const res = await ask(gw, protocol, model, stream);
            const text = await readText(res);
            const where = `${header.name} via ${UPSTREAM_OF[model]}, ${stream ? "streamed" : "not streamed"}`;
            assert.equal(res.status, 429, `${where}: ${text}`);
            const all = [...res.headers].map(([name, value]) => `${name}: ${value}`).join("\n") + text;
            for (const key of KEYS) assert.ok(!all.includes(key), `${where}: the key reached the client:\n${all}`);
            assert.equal(res.headers.get(header.name), expected, `${where}: what the client got`);
          }
        }
      }
    }
  });
}

Deno.test("a Responses socket's error event carries an upstream's retry headers only in their own forms", async () => {
  await using upstream = fakeUpstream();
  await using gw = await gateway(upstream.url);
  await using socket = await openSocket(gw.url, { authorization: `Bearer ${gw.token}` });
  for (const header of HEADERS) {
    for (const [value, expected] of [[header.hostile, undefined], [() => header.good, header.good]] as const) {
      refuseWith(upstream, header.name, value);
      for (const model of ["claude-test", "gpt-test", "gemini-test"]) {
        socket.send(create({ model }));
        const event = await socket.next();
        const where = `${header.name} via ${UPSTREAM_OF[model]}`;
        assert.equal(event.type, "error", `${where}: ${JSON.stringify(event)}`);
        const text = JSON.stringify(event);
        for (const key of KEYS) assert.ok(!text.includes(key), `${where}: the key reached the client: ${text}`);
        const headers = (event.error as { headers?: Record<string, string> }).headers ?? {};
        assert.equal(headers[header.name], expected, `${where}: ${text}`);
      }
    }
  }
});
