/**
 * @module Compaction made by the gateway on an Anthropic and a chat upstream: the trigger answered by one sealed
 * compaction item, the summary standing in for the item on later turns, POST /v1/responses/compact,
 * `context_management`, and the 400s for an item that was changed, made for another token or made elsewhere.
 */
import assert from "node:assert/strict";
import { COMPACTION_INSTRUCTIONS, SUMMARY_HEADER } from "../../src/translate/compaction.ts";
import { requestLog } from "../../src/usage/query.ts";
import { startClouds } from "../_clouds.ts";
import { readText } from "../_helpers.ts";
import { CASES, type Json, setup, systemSent, turnsSent } from "../_responses.ts";
import { KINDS, type Turn } from "../_scripted_turns.ts";

const SUMMARY = "The user wants the time in UTC; get_time said noon; next: tell the user.";
const TURNS: Turn[] = [{ text: SUMMARY }, { text: "It is noon, as noted." }];

/** A conversation in the middle of a tool loop, as a client would send it before compacting. */
const CONVERSATION: Json[] = [
  { role: "user", content: "What time is it in UTC?" },
  { type: "function_call", call_id: "call_1", name: "get_time", arguments: '{"tz":"UTC"}' },
  { type: "function_call_output", call_id: "call_1", output: "12:00 noon" },
  { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me answer." }] },
];
const TRIGGER = { type: "compaction_trigger" };

/** The text of every part an upstream request carries (system, messages), whatever its protocol. */
function allText(body: Json): string {
  return JSON.stringify(body);
}

for (const c of CASES) {
  Deno.test(`a compaction_trigger gets exactly one sealed compaction item (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const response = await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
    assert.equal(response.status, "completed");
    assert.equal(response.output.length, 1, JSON.stringify(response.output));
    const [item] = response.output;
    assert.equal(item.type, "compaction");
    assert.match(item.encrypted_content, /^mgc1\.[A-Za-z0-9_-]+$/);
    // Opaque: neither the summary nor anything of the conversation can be read from it.
    assert.ok(!atobSafe(item.encrypted_content.slice(5)).includes("noon"));
    // The summary call: the gateway's instructions, the conversation as a transcript, no tools, nothing more.
    assert.equal(s.upstream.requests.length, 1);
    const sent = s.upstream.requests[0].body as Json;
    assert.ok(allText(sent).includes(JSON.stringify(COMPACTION_INSTRUCTIONS).slice(1, 60)));
    for (const part of ["What time is it in UTC?", "get_time", "12:00 noon", "Let me answer."]) {
      assert.ok(allText(sent).includes(part), `the transcript has "${part}"`);
    }
    assert.equal(sent.tools, undefined);
    assert.ok(!allText(sent).includes("compaction_trigger"));
    // Its usage is the request's.
    const exchange = s.gw.exchanges.at(-1)!;
    assert.equal(exchange.compaction, "gateway");
    assert.ok(exchange.usage!.output_tokens > 0);
  });

  Deno.test(`the turn after a compaction sends the summary in place of the item and what came before (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const compacted = await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
    const next = await s.respond({
      input: [...CONVERSATION, ...compacted.output, { role: "user", content: "And in Paris?" }],
      store: false,
    });
    assert.equal(next.status, "completed");
    const sent = s.upstream.requests[1].body as Json;
    const turns = turnsSent(c.kind, sent);
    assert.deepEqual(turns, [`user: ${SUMMARY_HEADER}\n\n${SUMMARY}`, "user: And in Paris?"]);
    assert.ok(!allText(sent).includes("mgc1."), "the sealed item does not reach the upstream");
    assert.ok(!allText(sent).includes("12:00 noon"), "what came before the item is dropped");
  });

  Deno.test(`instructions before a compaction item stay in force (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const compacted = await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
    const rules = { type: "message", role: "developer", content: "Answer in French." };
    await s.respond({
      input: [rules, ...CONVERSATION, ...compacted.output, { role: "user", content: "Et à Paris ?" }],
    });
    const sent = s.upstream.requests[1].body as Json;
    assert.deepEqual(systemSent(c.kind, sent), ["Answer in French."]);
    assert.deepEqual(turnsSent(c.kind, sent), [`user: ${SUMMARY_HEADER}\n\n${SUMMARY}`, "user: Et à Paris ?"]);
  });
}

/** Decodes base64url without throwing, for checking that a sealed value shows nothing. */
function atobSafe(text: string): string {
  try {
    return atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    return "";
  }
}

for (const k of KINDS) {
  const c = { ...k, stream: false, label: `${k.kind} upstream` };

  Deno.test(`a stored compaction continues with previous_response_id (${c.label})`, async () => {
    await using s = await setup({ ...c, stream: true }, TURNS);
    const compacted = await s.respond({ input: [...CONVERSATION, TRIGGER] });
    await s.respond({ previous_response_id: compacted.id, input: "And in Paris?" });
    const turns = turnsSent(c.kind, s.upstream.requests[1].body as Json);
    assert.deepEqual(turns, [`user: ${SUMMARY_HEADER}\n\n${SUMMARY}`, "user: And in Paris?"]);
  });

  Deno.test(`a second compaction summarizes the first summary with what followed (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const first = await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
    const later = [...CONVERSATION, ...first.output, { role: "user", content: "And in Paris?" }];
    const second = await s.respond({ input: [...later, TRIGGER], store: false });
    assert.deepEqual(second.output.map((i: Json) => i.type), ["compaction"]);
    const transcript = allText(s.upstream.requests[1].body as Json);
    assert.ok(transcript.includes(SUMMARY) && transcript.includes("And in Paris?"), transcript);
    assert.ok(!transcript.includes("12:00 noon"), "what the first summary replaced stays out");
  });

  Deno.test(`a stored compaction does not keep its trigger among the input items (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const compacted = await s.respond({ input: [...CONVERSATION, TRIGGER] });
    const { status, body } = await s.call("GET", `/v1/responses/${compacted.id}/input_items?order=asc`);
    assert.equal(status, 200);
    assert.deepEqual(body.data.map((i: Json) => i.type), [
      "message",
      "function_call",
      "function_call_output",
      "message",
    ]);
  });

  Deno.test(`POST /v1/responses/compact answers the user messages and one compaction item (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const res = await s.gw.post("/v1/responses/compact", { model: c.model, input: CONVERSATION }, {
      "x-api-key": s.token,
    });
    const body = JSON.parse(await readText(res));
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.object, "response.compaction");
    assert.deepEqual(body.output.map((i: Json) => i.type), ["message", "compaction"]);
    assert.deepEqual(body.output[0].content, [{ type: "input_text", text: "What time is it in UTC?" }]);
    assert.ok(body.usage.output_tokens > 0);
    // What it answers is what the next turn takes.
    await s.respond({ input: [...body.output, { role: "user", content: "Thanks" }], store: false });
    assert.deepEqual(turnsSent(c.kind, s.upstream.requests[1].body as Json), [
      `user: ${SUMMARY_HEADER}\n\n${SUMMARY}`,
      "user: Thanks",
    ]);
  });

  Deno.test(`POST /v1/responses/compact compacts a stored conversation by previous_response_id (${c.label})`, async () => {
    await using s = await setup(c, [{ text: "Noted." }, { text: SUMMARY }]);
    const first = await s.respond({ input: "Remember the number 42." });
    const res = await s.gw.post("/v1/responses/compact", { model: c.model, previous_response_id: first.id }, {
      "x-api-key": s.token,
    });
    const body = JSON.parse(await readText(res));
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.output.map((i: Json) => i.type), ["message", "compaction"]);
    const transcript = allText(s.upstream.requests[1].body as Json);
    assert.ok(transcript.includes("Remember the number 42.") && transcript.includes("Noted."), transcript);
  });

  for (const stream of [false, true]) {
    Deno.test(`context_management compacts past compact_threshold, then answers (${c.label}, ${stream ? "streamed" : "whole"})`, async () => {
      await using s = await setup({ ...c, stream }, TURNS);
      const threshold = [{ type: "compaction", compact_threshold: 20 }];
      const response = await s.respond({ input: CONVERSATION, context_management: threshold, store: false });
      assert.deepEqual(response.output.map((i: Json) => i.type), ["compaction", "message"]);
      assert.equal(response.output[1].content[0].text, "It is noon, as noted.");
      assert.equal(s.upstream.requests.length, 2);
      assert.deepEqual(turnsSent(c.kind, s.upstream.requests[1].body as Json), [
        `user: ${SUMMARY_HEADER}\n\n${SUMMARY}`,
      ]);
      // Both calls are the request's usage: 7 output tokens each in the scripted model. The client is charged for
      // both, and the answer's usage says so, as the request log does.
      await s.gw.flush();
      const exchange = s.gw.exchanges.at(-1)!;
      assert.equal(exchange.usage!.output_tokens, 14);
      const logged = exchange.usage!;
      const input = logged.input_tokens + logged.cache_read_input_tokens + logged.cache_creation_input_tokens;
      assert.deepEqual(
        [response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens],
        [input, 14, input + 14],
      );
    });
  }

  Deno.test(`context_management under compact_threshold changes nothing (${c.label})`, async () => {
    await using s = await setup(c, [{ text: "Hi." }]);
    const threshold = [{ type: "compaction", compact_threshold: 100000 }];
    const response = await s.respond({ input: "Hello", context_management: threshold, store: false });
    assert.deepEqual(response.output.map((i: Json) => i.type), ["message"]);
    assert.equal(s.upstream.requests.length, 1);
  });

  Deno.test(`a changed, borrowed or foreign compaction item is a 400 naming it (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const compacted = await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
    const item = compacted.output[0];
    const sealed: string = item.encrypted_content;
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
    const cannotOpen = /this compaction item cannot be opened: it was changed, or made for another API key/;
    const cases: [string, Json, RegExp, string?][] = [
      ["changed", { ...item, encrypted_content: flipped }, cannotOpen],
      ["another token's", item, cannotOpen, s.gw.tokens.default],
      ["made elsewhere", { ...item, encrypted_content: "gAAAAABopaque" }, /was not made by this gateway/],
    ];
    for (const [what, bad, message, token] of cases) {
      const { status, error } = await s.refused({ input: [{ role: "user", content: "Hi" }, bad] }, token);
      assert.equal(status, 400, what);
      assert.equal(error.param, "input[1].encrypted_content", what);
      assert.match(error.message, message, what);
    }
    assert.equal(s.upstream.requests.length, 1, "no refused request reached the upstream");
  });

  Deno.test(`a compaction_trigger with nothing before it is a 400 (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const { status, error } = await s.refused({ input: [TRIGGER] });
    assert.equal(status, 400);
    assert.equal(error.param, "input");
    assert.equal(s.upstream.requests.length, 0);
  });

  Deno.test(`a compaction_trigger that is not the last input item is a 400 naming it (${c.label})`, async () => {
    await using s = await setup(c, TURNS);
    const { status, error } = await s.refused({ input: [TRIGGER, { role: "user", content: "Hi" }] });
    assert.equal(status, 400);
    assert.equal(error.param, "input[0]");
    assert.match(error.message, /compaction_trigger must be the last input item/);
  });
}

Deno.test("Bedrock and Vertex models compact, and their next turn carries the summary", async () => {
  await using clouds = await startClouds();
  for (const [model, fake] of [["claude-bedrock", clouds.bedrock], ["claude-vertex", clouds.vertex]] as const) {
    const compact = await clouds.post("/v1/responses", { model, input: [...CONVERSATION, TRIGGER], store: false });
    const compacted = JSON.parse(await readText(compact));
    assert.deepEqual(compacted.output.map((i: Json) => i.type), ["compaction"], model);
    const summary = fake.requests.at(-1)!.body as Json;
    assert.ok(JSON.stringify(summary).includes("12:00 noon"), `${model}: the summary call carries the conversation`);
    const next = await clouds.post("/v1/responses", {
      model,
      input: [...compacted.output, { role: "user", content: "Go on" }],
      store: false,
    });
    assert.equal(next.status, 200, await readText(next));
    const sent = fake.requests.at(-1)!.body as Json;
    // The fake's text answer is the summary it wrote.
    assert.deepEqual(turnsSent("anthropic", sent), [`user: ${SUMMARY_HEADER}\n\nHéllo, wörld 🌍`, "user: Go on"]);
  }
});

Deno.test("the summary call is the request's usage in the request log", async () => {
  await using s = await setup({ ...KINDS[1], stream: true }, TURNS);
  await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
  await s.gw.flush();
  const [entry] = await requestLog(s.gw.store.kv, { limit: 1 });
  assert.equal(entry.route, "/v1/responses");
  assert.equal(entry.output_tokens, 7);
  assert.ok(entry.input_tokens > 0);
});

Deno.test("the summary request is held in the body budget while it is under way", async () => {
  await using s = await setup({ ...KINDS[0], stream: false }, TURNS);
  const answer = s.upstream.routes.get(KINDS[0].path)!;
  let held = 0;
  s.upstream.routes.set(KINDS[0].path, (seen, req) => {
    held = s.gw.deps.bodyBudget.inFlight();
    return answer(seen, req);
  });
  const res = await s.gw.post("/v1/responses", { model: KINDS[0].model, input: [...CONVERSATION, TRIGGER] }, {
    "x-api-key": s.token,
  });
  await readText(res);
  const client = JSON.stringify({ model: KINDS[0].model, input: [...CONVERSATION, TRIGGER] }).length;
  const transcript = JSON.stringify(s.upstream.requests[0].body).length;
  assert.ok(held >= client + transcript * 0.9, `held ${held} bytes for a ${client}-byte body and its summary call`);
  assert.equal(s.gw.deps.bodyBudget.inFlight(), 0);
});

Deno.test("compactions are counted on /metrics", async () => {
  await using s = await setup({ ...KINDS[0], stream: false }, TURNS);
  await s.respond({ input: [...CONVERSATION, TRIGGER], store: false });
  const page = await readText(await fetch(`${s.gw.url}/metrics`));
  assert.match(page, /modelgate_compactions_total\{model="claude-test"\} 1/);
});
