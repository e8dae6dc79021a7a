/**
 * The conversation state of a Responses client on `openai-responses` upstreams: the gateway keeps it, so
 * `previous_response_id`, `item_reference` and GET /v1/responses/{id} work whichever deployment serves a turn, and
 * the provider gets the whole conversation; reasoning another account made is left out after that account's
 * deployment refuses it, and kept where the account can read it.
 */
import assert from "node:assert/strict";
import { bearer, KEYS, READ_FILE, responsesRig, responsesUpstream } from "../_responses_upstream.ts";
import { type Json, mountResponsesApi } from "../_fake_responses_api.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { readSse, startGateway } from "../_helpers.ts";

const TOOLS = [{ type: "function", name: "read_file", parameters: { type: "object" } }];

async function create(rig: Awaited<ReturnType<typeof responsesRig>>, body: Json): Promise<Json> {
  const res = await rig.post("/v1/responses", { tools: TOOLS, ...body });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text);
}

function callOf(response: Json): Json {
  const call = response.output.find((item: Json) => item.type === "function_call");
  assert.ok(call, JSON.stringify(response.output));
  return call;
}

Deno.test("previous_response_id continues on another deployment of the account: the whole conversation, reasoning verified", async () => {
  await using rig = await responsesRig();
  const reasoning = { effort: "low" };
  const include = ["reasoning.encrypted_content"];
  const first = await create(rig, { model: "gpt-codex", input: "Read notes.txt", reasoning, include });
  assert.match(first.id, /^resp_fake/, "the client sees the provider's own id");
  rig.setDown("rsp-a", true);
  const second = await create(rig, {
    model: "gpt-codex",
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: callOf(first).call_id, output: "hi" }],
    reasoning,
    include,
  });
  assert.equal(second.output.at(-1).content[0].text, "The notes say hi.");
  const sent = rig.upstream.requests.filter((r) => r.path === "/rsp-b/v1/responses").at(-1)!.body!;
  assert.equal(sent.previous_response_id, undefined, "the provider is not asked for state it may not have");
  assert.deepEqual((sent.input as Json[]).map((i) => i.type), [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
  ]);
  assert.deepEqual(rig.api["rsp-b"].verified, [1], "the other key of the account read the reasoning");
  const stored = await rig.gw.post(`/v1/responses/${second.id}`, undefined, { "x-api-key": rig.token });
  assert.equal(stored.status, 405, "only GET reads a stored response");
  const got = await fetch(`${rig.gw.url}/v1/responses/${second.id}`, { headers: { "x-api-key": rig.token } });
  assert.equal(got.status, 200);
  assert.equal((await got.json()).id, second.id);
});

Deno.test("a turn that lands on another account's deployment is sent again without the reasoning it cannot read", async () => {
  await using rig = await responsesRig();
  const body = { model: "gpt-cross", reasoning: { effort: "low" }, include: ["reasoning.encrypted_content"] };
  const first = await create(rig, { ...body, input: "Read notes.txt", store: false });
  rig.setDown("rsp-a2", true);
  // Codex's way: store false, the whole conversation sent back, reasoning items and all.
  const second = await create(rig, {
    ...body,
    store: false,
    input: [
      { type: "message", role: "user", content: "Read notes.txt" },
      ...first.output,
      { type: "function_call_output", call_id: callOf(first).call_id, output: "hi" },
    ],
  });
  assert.equal(second.output.at(-1).content[0].text, "The notes say hi.");
  const tries = rig.upstream.requests.filter((r) => r.path === "/rsp-x/v1/responses");
  assert.equal(tries.length, 2, "refused once over the reasoning, then served");
  assert.ok((tries[0].body!.input as Json[]).some((i) => i.type === "reasoning"));
  assert.ok(!(tries[1].body!.input as Json[]).some((i) => i.type === "reasoning"));
  assert.ok(rig.gw.logs.some((l) => l.event === "translate_drop" && l.type === "reasoning"));
  const exchange = rig.gw.exchanges.at(-1)!;
  assert.equal(exchange.status, 200);
});

Deno.test("a stored chain's reasoning without content, refused by another account, is left out; the chain goes on", async () => {
  await using rig = await responsesRig();
  // No include: the reasoning item has an id and no content, which only the provider that stored it can resolve.
  const first = await create(rig, { model: "gpt-cross", input: "Read notes.txt", reasoning: { effort: "low" } });
  assert.equal(first.output[0].type, "reasoning");
  rig.setDown("rsp-a2", true);
  const second = await create(rig, {
    model: "gpt-cross",
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: callOf(first).call_id, output: "hi" }],
  });
  assert.equal(second.output.at(-1).content[0].text, "The notes say hi.");
  const tries = rig.upstream.requests.filter((r) => r.path === "/rsp-x/v1/responses");
  assert.equal(tries.length, 2);
});

Deno.test("a deployment is asked twice at most: a second refusal, here over a compaction item, goes to the client", async () => {
  await using rig = await responsesRig();
  const res = await rig.post("/v1/responses", {
    model: "gpt-cross",
    input: [
      { type: "reasoning", id: "rs_made_up", summary: [], encrypted_content: "bm90IG91cnM=" },
      { type: "compaction", id: "cmp_made_up", encrypted_content: "bm90IG91cnM=" },
      { type: "message", role: "user", content: "hi" },
    ],
  });
  // The compaction item is the provider's to read: only the reasoning can be left out, and that is not enough.
  assert.equal(res.status, 400);
  const error = (await res.json()).error;
  assert.equal(error.code, "invalid_encrypted_content");
  assert.match(error.message, /cmp_made_up/);
  assert.equal(rig.upstream.requests.filter((r) => r.path === "/rsp-a2/v1/responses").length, 2);
});

Deno.test("item_reference names an item of a stored response, which the provider then gets whole", async () => {
  await using rig = await responsesRig();
  const first = await create(rig, { model: "gpt-codex", input: "Read notes.txt" });
  const call = callOf(first);
  const second = await create(rig, {
    model: "gpt-codex",
    input: [
      { type: "message", role: "user", content: "Read notes.txt" },
      { type: "item_reference", id: call.id },
      { type: "function_call_output", call_id: call.call_id, output: "hi" },
    ],
  });
  assert.equal(second.output.at(-1).content[0].text, "The notes say hi.");
  const sent = rig.upstream.requests.at(-1)!.body!.input as Json[];
  assert.deepEqual(sent[1], call, "the reference was replaced by the item itself");
});

Deno.test("a chain's next turn goes back to the deployment that served it: the pin is made under the provider's id", async () => {
  await using upstream = fakeUpstream();
  for (const [name, key] of [["pair-a", KEYS.TEST_OPENAI_KEY], ["pair-b", KEYS.TEST_OPENAI_KEY_B]]) {
    mountResponsesApi(upstream, `/${name}/v1`, { secret: "acct-1", authorized: bearer(key), script: READ_FILE });
  }
  const rsp = (name: string, key: string) => responsesUpstream(upstream.url, name, key, "[gpt-pair]");
  // The weighted choice takes the first deployment, then the second: only the pin brings the second turn back.
  const draws = [0.1, 0.9, 0.9, 0.9];
  await using gw = await startGateway(upstream.url, {
    configYaml: `listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
upstreams:
${rsp("pair-a", "TEST_OPENAI_KEY")}
${rsp("pair-b", "TEST_OPENAI_KEY_B")}
groups:
  - { name: oa, listing: openai, models: [gpt-pair] }
`,
    env: KEYS,
    random: () => draws.shift() ?? 0.9,
  });
  const post = async (body: Json) => {
    const res = await gw.post("/v1/responses", { model: "gpt-pair", tools: TOOLS, ...body }, {
      "x-api-key": gw.tokens.oa,
    });
    assert.equal(res.status, 200);
    if (body.stream !== true) return await res.json();
    return JSON.parse((await readSse(res)).at(-1)!.data).response;
  };
  const first = await post({ input: "Read notes.txt", stream: true });
  const second = await post({
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: callOf(first).call_id, output: "hi" }],
  });
  assert.equal(second.output.at(-1).content[0].text, "The notes say hi.");
  const served = upstream.requests.map((r) => r.path.split("/")[1]);
  assert.deepEqual(served, [served[0], served[0]], `both turns on one deployment: ${served}`);
});
