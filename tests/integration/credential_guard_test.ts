/**
 * @module Credential guessing is slowed per client address, on every route that checks a credential: console
 * sign-in, the admin API, the /v1 routes and the Gemini routes. Client addresses come from X-Forwarded-For through a trusted proxy
 * (the test itself, on 127.0.0.1), so one test can speak as several clients.
 */
import assert from "node:assert/strict";
import { post } from "../_console.ts";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { ADMIN_KEY, anthropicMessage, fixture, messagesBody, readText, startGateway } from "../_helpers.ts";
import { parsePrometheusText, sampleValue } from "../_prom_text.ts";
import { openSocket, rawHandshake } from "../_socket.ts";

/** A frozen clock: no attempt is earned back while a test runs, so the counts are exact. */
const FROZEN = { now: () => new Date("2026-05-01T12:00:00Z") };
const BEHIND_PROXY = "trusted_proxies: [127.0.0.1]\n";
const ATTACKER = { "x-forwarded-for": "203.0.113.66" };
const OPERATOR = { "x-forwarded-for": "198.51.100.7" };

Deno.test("100 wrong console sign-ins from one address: 401 for the first few, 429 after; the operator elsewhere signs in", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml: BEHIND_PROXY, ...FROZEN });
  const statuses: number[] = [];
  let refusal: Response | undefined;
  for (let i = 0; i < 100; i++) {
    const res = await post(gw, "/ui/login", { key: `guess-${i}` }, ATTACKER);
    statuses.push(res.status);
    if (res.status === 429) refusal ??= res;
    else await res.body?.cancel();
  }
  assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
  assert.deepEqual(statuses.slice(5), Array(95).fill(429));
  assert.equal(refusal!.headers.get("retry-after"), "12");
  assert.match(await readText(refusal!), /Too many wrong admin keys from this address; retry in 12 s/);
  // The right key from the guessing address waits too: it is not told apart from one more guess.
  const late = await post(gw, "/ui/login", { key: ADMIN_KEY }, ATTACKER);
  assert.equal(late.status, 429);
  await late.body?.cancel();
  const operator = await post(gw, "/ui/login", { key: ADMIN_KEY }, OPERATOR);
  assert.equal(operator.status, 303);
  await operator.body?.cancel();
  assert.deepEqual(gw.logs.filter((line) => line.event === "auth_throttled"), [
    { level: "warn", event: "auth_throttled", credential: "admin_key", client: "203.0.113.66", retry_after_s: 12 },
  ]);
});

Deno.test("wrong admin keys on the admin API: 429 in its error shape with retry-after; the right key elsewhere works", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, {
    admin: true,
    extraYaml: BEHIND_PROXY,
    ...FROZEN,
  });
  const statuses: number[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await gw.admin("GET", "/admin/tokens", undefined, { authorization: `Bearer guess-${i}`, ...ATTACKER });
    statuses.push(res.status);
    if (i < 29) await res.body?.cancel();
    else {
      assert.equal(res.headers.get("retry-after"), "12");
      const body = await res.json();
      assert.equal(body.error.type, "rate_limit_error");
      assert.match(body.error.message, /Too many wrong admin keys/);
    }
  }
  assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(25).fill(429)]);
  const operator = await gw.admin("GET", "/admin/tokens", undefined, OPERATOR);
  assert.equal(operator.status, 200);
  await operator.body?.cancel();
  const metrics = parsePrometheusText(await readText(await fetch(`${gw.url}/metrics`)));
  assert.equal(sampleValue(metrics, "modelgate_auth_throttled_total", { credential: "admin_key" }), 25);
});

Deno.test("operator keys on the admin API: a live one costs nothing, a revoked one is no guess, an unknown one is a wrong admin key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true, extraYaml: BEHIND_PROXY, ...FROZEN });
  const mint =
    async () => (await (await gw.admin("POST", "/admin/operator-keys", { name: "v", role: "viewer" })).json());
  const viewer = await mint();
  const revoked = await mint();
  await (await gw.admin("DELETE", `/admin/operator-keys/${revoked.key.id}`)).body?.cancel();
  const call = async (secret: string, method = "GET") => {
    const body = method === "POST" ? { group: "default", name: "x" } : undefined;
    const res = await gw.admin(method, "/admin/tokens", body, { authorization: `Bearer ${secret}`, ...ATTACKER });
    await res.body?.cancel();
    return res.status;
  };
  const statuses: number[] = [];
  for (let i = 0; i < 10; i++) statuses.push(await call(viewer.secret), await call(viewer.secret, "POST"));
  for (let i = 0; i < 10; i++) statuses.push(await call(revoked.secret));
  assert.deepEqual(statuses, [...Array(10).fill([200, 403]).flat(), ...Array(10).fill(401)]);
  // Secrets shaped like operator keys that are no key at all are guesses at the admin key.
  const guesses: number[] = [];
  for (let i = 0; i < 7; i++) guesses.push(await call(`mgk-${String(i).repeat(43)}`));
  assert.deepEqual(guesses, [...Array(5).fill(401), 429, 429]);
  // With the address's bucket empty, its live operator key waits like the admin key; another address is served.
  assert.equal(await call(viewer.secret), 429);
  const elsewhere = await gw.admin("GET", "/admin/tokens", undefined, {
    authorization: `Bearer ${viewer.secret}`,
    ...OPERATOR,
  });
  assert.equal(elsewhere.status, 200);
  await elsewhere.body?.cancel();
});

Deno.test("wrong tokens on /v1 are slowed per address in the route's protocol; a real token elsewhere is served", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { extraYaml: BEHIND_PROXY, ...FROZEN });
  const statuses: number[] = [];
  for (let i = 0; i < 25; i++) {
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": `sk-guess-${i}`, ...ATTACKER });
    statuses.push(res.status);
    if (i < 24) await res.body?.cancel();
    else {
      assert.equal(res.headers.get("retry-after"), "3");
      assert.equal((await res.json()).error.type, "rate_limit_error");
    }
  }
  assert.deepEqual(statuses, [...Array(20).fill(401), ...Array(5).fill(429)]);
  const chat = await gw.post("/v1/chat/completions", { model: "gpt-test", messages: [] }, {
    authorization: "Bearer sk-guess",
    "x-api-key": "",
    ...ATTACKER,
  });
  assert.equal(chat.status, 429);
  assert.equal((await chat.json()).error.code, "rate_limit_exceeded");
  const served = await gw.post("/v1/messages", messagesBody(), OPERATOR);
  assert.equal(served.status, 200);
  await served.body?.cancel();
  assert.equal(upstream.requests.length, 1, "no guess reached the upstream");
});

Deno.test("wrong Google keys on the Gemini routes are charged as /v1 tokens, and no key in the URL is logged", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { extraYaml: BEHIND_PROXY, ...FROZEN });
  const contents = { contents: [{ role: "user", parts: [{ text: "Hi" }] }] };
  const generate = "/models/claude-test:generateContent";
  // Guesses by header and by the key parameter, on each prefix and on the Gemini listing, share one bucket.
  const guess = (i: number) =>
    i % 3 === 0
      ? gw.post(`/v1beta${generate}`, contents, { "x-goog-api-key": `sk-guess-h${i}`, "x-api-key": "", ...ATTACKER })
      : i % 3 === 1
      ? gw.post(`/v1${generate}?key=sk-guess-q${i}`, contents, { "x-api-key": "", ...ATTACKER })
      : fetch(`${gw.url}/v1alpha/models?key=sk-guess-q${i}`, { headers: ATTACKER });
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    const res = await guess(i);
    statuses.push(res.status);
    if (i < 20) await res.body?.cancel();
    else {
      assert.equal(res.headers.get("retry-after"), "3");
      assert.equal((await res.json()).error.status, "RESOURCE_EXHAUSTED");
    }
  }
  assert.deepEqual(statuses, [...Array(20).fill(401), 429]);
  const messages = await gw.post("/v1/messages", messagesBody(), ATTACKER);
  assert.equal(messages.status, 429, "the Gemini guesses emptied the address's bucket for every /v1 route");
  await messages.body?.cancel();
  const served = await gw.post(`/v1beta${generate}?key=${gw.tokens.default}`, contents, {
    "x-api-key": "",
    ...OPERATOR,
  });
  assert.equal(served.status, 200, await served.clone().text());
  await served.body?.cancel();
  assert.equal(upstream.requests.length, 1, "no guess reached the upstream");
  const logged = JSON.stringify(gw.logs);
  for (const secret of [gw.tokens.default, "sk-guess-q", "sk-guess-h", "key="]) {
    assert.ok(!logged.includes(secret), `${secret} reached a log line`);
  }
  assert.ok(gw.exchanges.every((exchange) => !JSON.stringify(exchange).includes("sk-guess")));
});

Deno.test("a Responses WebSocket is a /v1 client: wrong tokens at its handshake are charged, and its turns wait with its address", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic/text.sse")));
  await using gw = await startGateway(upstream.url, { extraYaml: BEHIND_PROXY, ...FROZEN });
  const right = { authorization: `Bearer ${gw.tokens.default}` };
  // A socket the guessing address opened with a right token before its guesses.
  await using socket = await openSocket(gw.url, { ...right, ...ATTACKER });
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    statuses.push((await rawHandshake(gw.url, { authorization: `Bearer sk-guess-${i}`, ...ATTACKER })).status);
  }
  assert.deepEqual(statuses, [...Array(20).fill(401), 429]);
  // The handshakes' guesses emptied the address's bucket for every /v1 request it sends, the right token too.
  const handshake = await rawHandshake(gw.url, { ...right, ...ATTACKER });
  assert.equal(handshake.status, 429);
  assert.equal(handshake.headers.get("retry-after"), "3");
  const http = await gw.post("/v1/messages", messagesBody(), ATTACKER);
  assert.equal(http.status, 429);
  await http.body?.cancel();
  // The socket's turns and warm-ups come from the address its handshake came from.
  for (const generate of [true, false]) {
    socket.send({ type: "response.create", model: "claude-test", input: "Hi", store: false, generate });
    const refused = await socket.next();
    assert.equal(refused.type, "error");
    assert.equal(refused.status, 429, JSON.stringify(refused));
    assert.equal((refused.error as { headers: Record<string, string> }).headers["retry-after"], "3");
  }
  await using served = await openSocket(gw.url, { ...right, ...OPERATOR });
  served.send({ type: "response.create", model: "claude-test", input: "Hi", store: false });
  assert.equal((await served.until("response.completed", "error")).at(-1)!.type, "response.completed");
  assert.equal(upstream.requests.length, 1, "only the other address's turn reached the upstream");
});

Deno.test("right tokens take nothing, and X-Forwarded-For from an untrusted address changes no one's bucket", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, FROZEN);
  for (let i = 0; i < 30; i++) {
    const res = await gw.post("/v1/messages", messagesBody());
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    // Without trusted_proxies the header is the client's own word: every guess counts against 127.0.0.1.
    const res = await gw.post("/v1/messages", messagesBody(), {
      "x-api-key": "sk-guess",
      "x-forwarded-for": `192.0.2.${i}`,
    });
    statuses.push(res.status);
    await res.body?.cancel();
  }
  assert.deepEqual(statuses, [...Array(20).fill(401), 429]);
});

Deno.test("a disabled token is no guess: however often it is sent, it gets its 401 and never a 429", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, FROZEN);
  const { record, secret } = await gw.store.createToken({ group: "default" });
  await gw.store.revokeToken(record.id);
  for (let i = 0; i < 30; i++) {
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.message, "API key is disabled");
  }
});

Deno.test("wrong admin keys on /metrics count as on the admin API: it is the same key", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, {
    admin: true,
    extraYaml: `${BEHIND_PROXY}metrics: { require_admin_key: true }\n`,
    ...FROZEN,
  });
  const scrape = (key: string, from: Record<string, string>) =>
    fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${key}`, ...from } });
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await scrape(`guess-${i}`, ATTACKER);
    statuses.push(res.status);
    if (res.status === 429) assert.equal(res.headers.get("retry-after"), "12");
    await res.body?.cancel();
  }
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
  const page = await scrape(ADMIN_KEY, OPERATOR);
  assert.equal(page.status, 200);
  const metrics = parsePrometheusText(await readText(page));
  assert.equal(sampleValue(metrics, "modelgate_auth_throttled_total", { credential: "admin_key" }), 3);
});

Deno.test("any number of a working client's requests may be in flight from one address: right tokens cost nothing", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, FROZEN);
  const statuses = await Promise.all(Array.from({ length: 40 }, async () => {
    const res = await gw.post("/v1/messages", messagesBody());
    await res.body?.cancel();
    return res.status;
  }));
  assert.deepEqual(statuses, Array(40).fill(200));
});
