/**
 * An `azure-openai` upstream reached with the resource's key: a Responses client passed through to the deployment
 * (the key as `api-key`, never as a bearer; the body as sent but for the model; the answer unchanged), Codex's shape
 * on Azure (`store: true`, reasoning items kept by id) round-tripping, compaction, chat and Messages clients
 * translated onto it (the Anthropic SDK's tool loop with Azure verifying its own reasoning), `api: chat` for chat,
 * Responses and Messages clients, a Responses-only deployment on `api: chat`, and the key redacted wherever the
 * resource echoes it.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { AZURE_KEY } from "../_fake_azure.ts";
import { jsonReply } from "../_fake_upstream.ts";
import { azureRig, azureSecrets } from "../_azure_upstream.ts";
import { deadlineFetch, readText, within } from "../_helpers.ts";

const TOOLS = [
  { type: "function", name: "read_file", parameters: { type: "object", properties: { path: { type: "string" } } } },
];

/** What Codex sends on Azure: its usual request, but `store: true`. */
const CODEX_ON_AZURE = {
  model: "codex",
  instructions: "You are a coding agent.",
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Read notes.txt" }] }],
  tools: TOOLS,
  tool_choice: "auto",
  parallel_tool_calls: false,
  reasoning: { effort: "medium", summary: "auto" },
  include: ["reasoning.encrypted_content"],
  store: true,
  prompt_cache_key: "conv-azure-1",
  text: { verbosity: "low" },
};

for (const stream of [false, true]) {
  Deno.test(`Azure, key: a Responses request reaches the deployment as sent but for the model, with the key as api-key (stream: ${stream})`, async () => {
    await using rig = await azureRig();
    const res = await rig.post("/v1/responses", { ...CODEX_ON_AZURE, stream });
    assert.equal(res.status, 200);
    const got = await within(res.text(), 5000, "the answer");
    const seen = rig.upstream.requests.at(-1)!;
    assert.equal(seen.path, "/az-key/openai/v1/responses");
    assert.equal(seen.search, "", "the v1 API takes no api-version");
    assert.deepEqual(seen.body, { ...CODEX_ON_AZURE, model: "my-codex", stream });
    assert.equal(seen.headers.get("api-key"), AZURE_KEY);
    assert.equal(seen.headers.get("authorization"), null, "the key is never sent as a bearer token");
    for (const secret of azureSecrets(rig).filter((s) => s !== AZURE_KEY)) assert.ok(!seen.raw.includes(secret));
    assert.ok(!seen.raw.includes(rig.token), "the client's token does not go upstream");
    assert.ok(got.includes('"model":"my-codex"'), "the answer is the deployment's own");
    assert.equal(rig.resources["az-key"].unauthorized, 0);
  });
}

/** Codex's second turn: the first answer's items (reasoning with its id) and the tool's output. */
function secondTurn(first: Record<string, unknown>[], keepContent: boolean) {
  const call = first.find((item) => item.type === "function_call")!;
  const items = first.map((item) => {
    if (item.type !== "reasoning" || keepContent) return item;
    const { encrypted_content: _, ...byId } = item;
    return byId;
  });
  return [
    ...CODEX_ON_AZURE.input,
    ...items,
    { type: "function_call_output", call_id: call.call_id, output: "hi" },
  ];
}

for (const keepContent of [true, false]) {
  Deno.test(`Azure, key: Codex's store: true turns keep reasoning item ids, which the deployment finds again (encrypted content ${keepContent ? "kept" : "left out"})`, async () => {
    await using rig = await azureRig();
    const first = await rig.post("/v1/responses", CODEX_ON_AZURE);
    assert.equal(first.status, 200);
    const output = (await first.json()).output;
    assert.ok(output.some((item: { type: string; id?: string }) => item.type === "reasoning" && item.id));
    const input = secondTurn(output, keepContent);
    const second = await rig.post("/v1/responses", { ...CODEX_ON_AZURE, input });
    const text = await readText(second);
    assert.equal(second.status, 200, text);
    assert.equal(JSON.parse(text).output.at(-1).content[0].text, "The notes say hi.");
    assert.deepEqual(rig.upstream.requests.at(-1)!.body!.input, input, "the items reached the deployment unchanged");
    assert.deepEqual(rig.resources["az-key"].verified, [0, 1], "the deployment verified its own reasoning item");
  });
}

Deno.test("Azure, key: /v1/responses/compact is the deployment's own compaction", async () => {
  await using rig = await azureRig();
  const res = await rig.post("/v1/responses/compact", { model: "codex", input: CODEX_ON_AZURE.input });
  const body = await res.json();
  assert.equal(res.status, 200);
  assert.equal(rig.upstream.requests.at(-1)!.path, "/az-key/openai/v1/responses/compact");
  assert.equal(body.output.at(-1).type, "compaction");
});

const CHAT_CLIENTS = [
  {
    client: "a chat client",
    path: "/v1/chat/completions",
    body: { model: "gpt-chat", messages: [{ role: "user", content: "Hi" }] },
    text: (answer: { choices: { message: { content: string } }[] }) => answer.choices[0].message.content,
  },
  {
    client: "a Responses client (translated)",
    path: "/v1/responses",
    body: { model: "gpt-chat", input: "Hi", store: false },
    text: (answer: { output_text?: string; output: { content: { text: string }[] }[] }) =>
      answer.output.at(-1)!.content[0].text,
  },
  {
    client: "a Messages client (translated)",
    path: "/v1/messages",
    body: { model: "gpt-chat", max_tokens: 64, messages: [{ role: "user", content: "Hi" }] },
    text: (answer: { content: { text: string }[] }) => answer.content[0].text,
  },
];
for (const c of CHAT_CLIENTS) {
  Deno.test(`Azure, api: chat: ${c.client} is served through the deployment's Chat Completions`, async () => {
    await using rig = await azureRig();
    const res = await rig.post(c.path, c.body);
    const text = await readText(res);
    assert.equal(res.status, 200, text);
    // deno-lint-ignore no-explicit-any
    assert.equal(c.text(JSON.parse(text) as any), "chat ok");
    const seen = rig.upstream.requests.at(-1)!;
    assert.equal(seen.path, "/az-chat/openai/v1/chat/completions");
    assert.equal(seen.body!.model, "my-gpt");
    assert.equal(seen.headers.get("api-key"), AZURE_KEY);
    assert.equal(seen.headers.get("authorization"), null);
  });
}

Deno.test("Azure, key: a Chat Completions client reaches the deployment through its Responses API", async () => {
  await using rig = await azureRig();
  const res = await rig.post("/v1/chat/completions", { model: "codex", messages: [{ role: "user", content: "Hi" }] });
  const text = await readText(res);
  assert.equal(res.status, 200, text);
  assert.equal(JSON.parse(text).choices[0].message.content, "ok");
  const seen = rig.upstream.requests.at(-1)!;
  assert.equal(seen.path, "/az-key/openai/v1/responses");
  assert.equal(seen.body!.model, "my-codex");
  assert.equal(seen.headers.get("api-key"), AZURE_KEY);
});

Deno.test("Azure, Entra ID: the Anthropic SDK's tool loop with thinking, translated, has Azure verify its own reasoning", async () => {
  await using rig = await azureRig();
  const client = new Anthropic({ apiKey: rig.token, baseURL: rig.gw.url, maxRetries: 0, fetch: deadlineFetch() });
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Read notes.txt" }];
  const params = {
    model: "codex-entra",
    max_tokens: 20000,
    thinking: { type: "enabled" as const, budget_tokens: 16384 },
    tools: [{ name: "read_file", input_schema: { type: "object" as const, properties: { path: { type: "string" } } } }],
    messages,
  };
  const first = await client.messages.stream(params).finalMessage();
  assert.deepEqual(first.content.map((b) => b.type), ["thinking", "tool_use"]);
  const call = first.content.find((b) => b.type === "tool_use")!;
  messages.push({ role: "assistant", content: first.content });
  messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "hi" }] });
  const second = await client.messages.create(params);
  assert.equal((second.content.at(-1) as Anthropic.TextBlock).text, "The notes say hi.");
  assert.deepEqual(rig.resources["az-entra"].verified, [0, 1], "Azure verified its own reasoning on the second turn");
  const sent = rig.upstream.requests.filter((r) => r.path === "/az-entra/openai/v1/responses");
  assert.deepEqual(sent.map((r) => r.body!.model), ["my-codex", "my-codex"]);
  for (const r of sent) assert.match(r.headers.get("authorization") ?? "", /^Bearer eyJ/);
  assert.equal(rig.entra.grants.length, 1);
});

Deno.test("Azure, api: chat: a Responses-only deployment's OperationNotSupported is a 400 naming api: responses, no outage", async () => {
  await using rig = await azureRig();
  for (let i = 0; i < 4; i++) {
    const res = await rig.post("/v1/chat/completions", {
      model: "codex-chat",
      messages: [{ role: "user", content: "Hi" }],
    });
    const body = await res.json();
    assert.equal(res.status, 400);
    assert.match(body.error.message, /only through the Responses API.*"az-chat".*azure-openai with api: responses/);
  }
  assert.equal(rig.gw.logs.filter((line) => line.event === "responses_only_model").length, 1);
  const other = await rig.post("/v1/chat/completions", {
    model: "gpt-chat",
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(other.status, 200, "the deployment's other models are still served");
  await other.body?.cancel();
});

Deno.test("Azure, key: a key the resource echoes is redacted, in an answer and in an error", async () => {
  await using rig = await azureRig();
  const echo = (status: number) => (seen: { headers: Headers }) =>
    status === 200
      ? jsonReply({
        id: "resp_echo",
        object: "response",
        status: "completed",
        output: [{
          type: "message",
          role: "assistant",
          content: [{ type: "output_text", text: seen.headers.get("api-key") }],
        }],
      })
      : jsonReply({ error: { code: "400", message: `bad key ${seen.headers.get("api-key")}` } }, status);
  for (const status of [200, 400]) {
    rig.upstream.routes.set("POST /az-key/openai/v1/responses", echo(status));
    const res = await rig.post("/v1/responses", { model: "codex", input: "Hi" });
    const text = await readText(res);
    assert.equal(res.status, status);
    assert.ok(!text.includes(AZURE_KEY), `the key reached the client: ${text}`);
    assert.match(text, /\[redacted\]/);
  }
});
