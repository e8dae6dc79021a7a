/**
 * @module Codex's own tools through translation, over HTTP against a scripted model on both upstream kinds: the
 * freeform `apply_patch` offered as a function and its call returned as `custom_tool_call` with the exact raw
 * input, the history round trip of custom calls and outputs, namespaced tools flattened and mapped back, native
 * `custom` tools for an OpenAI upstream, provider-only tools logged, and tool calls that cannot cross refused.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { fakeUpstream } from "../_fake_upstream.ts";
import { deadlineFetch, fixture, readSse, startGateway } from "../_helpers.ts";
import { scriptedModel, type Step } from "../_scripted_model.ts";

/** A patch as Codex's apply_patch takes it: several lines, both kinds of quotes, a backslash, and non-ASCII text. */
const PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+Hello from modelgate!\n" +
  "+Quotes \"double\" and 'single', a \\ backslash, unicode: héllo ✓ 日本 🚀\n*** End Patch\n";

/** What Codex 0.169 sent on its second turn of an apply_patch loop (scrubbed), and its first turn derived from it. */
const CODEX_TURN = JSON.parse(fixture("codex/apply_patch_turn.json"));
const FIRST_TURN = { ...CODEX_TURN, input: CODEX_TURN.input.slice(0, -2) };
const SECOND_TURN = {
  ...CODEX_TURN,
  input: CODEX_TURN.input.map((item: Record<string, unknown>) =>
    item.type === "custom_tool_call" ? { ...item, input: PATCH } : item
  ),
};

const KINDS = [
  { model: "claude-test", kind: "Anthropic" },
  { model: "gpt-test", kind: "chat" },
];

type Json = Record<string, unknown>;

async function withModel(
  script: Step[],
  run: (gw: Awaited<ReturnType<typeof startGateway>>, upstream: ReturnType<typeof fakeUpstream>) => Promise<void>,
) {
  await using upstream = fakeUpstream();
  const model = scriptedModel(script);
  upstream.routes.set("POST /anth/v1/messages", model.anthropic);
  upstream.routes.set("POST /oai/v1/chat/completions", model.chat);
  upstream.routes.set("POST /native/v1/chat/completions", model.chat);
  await using gw = await startGateway(upstream.url, {
    extraUpstreams:
      `  - { name: native, protocol: openai, base_url: ${upstream.url}/native/v1, api_key_env: TEST_OPENAI_KEY,
      native_custom_tools: true, models: [gpt-native] }`,
    extraGroups: "  - { name: native, listing: openai, models: [gpt-native] }",
  });
  await run(gw, upstream);
}

/** Posts a Responses request as Codex does (bearer token) and gives the answer as its final response object. */
async function respond(gw: Awaited<ReturnType<typeof startGateway>>, body: Json, token: string): Promise<{
  response: Json;
  events: Json[];
}> {
  const res = await gw.post("/v1/responses", body, { authorization: `Bearer ${token}`, "x-api-key": "" });
  assert.equal(res.status, 200, await res.clone().text());
  if (body.stream !== true) return { response: await res.json(), events: [] };
  const events = (await readSse(res)).map((m) => JSON.parse(m.data));
  assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
  const last = events.at(-1)!;
  assert.equal(last.type, "response.completed");
  return { response: last.response, events };
}

/** The upstream's view of the tools it was offered: name -> schema and description. */
function offeredTools(body: Json): Map<string, { schema: Json; description: string; native?: Json }> {
  return new Map(((body.tools ?? []) as Json[]).map((t) => {
    if (t.type === "custom") {
      const custom = t.custom as Json;
      return [String(custom.name), { schema: {}, description: String(custom.description ?? ""), native: custom }];
    }
    const fn = (t.function ?? t) as Json;
    return [String(fn.name), {
      schema: (fn.parameters ?? fn.input_schema) as Json,
      description: String(fn.description ?? ""),
    }];
  }));
}

for (const { model, kind } of KINDS) {
  for (const stream of [true, false]) {
    const how = stream ? "streamed" : "whole";
    Deno.test(`Codex's apply_patch reaches a ${kind} upstream as a function and returns as custom_tool_call (${how})`, async () => {
      await withModel([{ tool: "apply_patch", raw: PATCH }], async (gw, upstream) => {
        const { response, events } = await respond(gw, { ...FIRST_TURN, model, stream }, gw.tokens.oa);
        const output = response.output as Json[];
        assert.equal(output.length, 1);
        const call = output[0];
        assert.equal(call.type, "custom_tool_call");
        assert.equal(call.name, "apply_patch");
        assert.equal(call.input, PATCH, "the raw input arrives byte for byte");
        assert.equal(call.arguments, undefined);
        assert.ok(typeof call.call_id === "string" && call.call_id);
        if (stream) {
          const types = events.map((e) => e.type);
          const added = events.find((e) => e.type === "response.output_item.added")!;
          assert.deepEqual([(added.item as Json).type, (added.item as Json).input], ["custom_tool_call", ""]);
          const deltas = events.filter((e) => e.type === "response.custom_tool_call_input.delta");
          assert.equal(deltas.map((e) => e.delta).join(""), PATCH);
          assert.ok(deltas.every((e) => e.item_id === call.id && e.output_index === 0));
          const done = events.find((e) => e.type === "response.custom_tool_call_input.done")!;
          assert.deepEqual([done.item_id, done.output_index, done.input], [call.id, 0, PATCH]);
          const itemDone = events.find((e) => e.type === "response.output_item.done")!;
          assert.equal((itemDone.item as Json).input, PATCH, "Codex builds the turn from output_item.done");
          assert.ok(types.indexOf("response.custom_tool_call_input.done") < types.indexOf("response.output_item.done"));
          assert.ok(!types.some((t) => String(t).startsWith("response.function_call_arguments")));
        }
        const tools = offeredTools(upstream.requests[0].body!);
        const patchTool = tools.get("apply_patch")!;
        assert.deepEqual(Object.keys((patchTool.schema as { properties: Json }).properties), ["input"]);
        assert.match(patchTool.description, /FREEFORM tool/, "the tool's own description is kept");
        assert.match(patchTool.description, /"input" string/);
        assert.match(patchTool.description, /begin_patch: "\*\*\* Begin Patch" LF/, "the grammar is shown");
        assert.ok(tools.has("exec_command"));
        assert.ok(!tools.has("web_search"));
        assert.ok(gw.logs.some((l) => l.event === "translate_drop" && l.type === "web_search"), "the drop is logged");
      });
    });
  }

  Deno.test(`Codex's custom_tool_call and its output reach a ${kind} upstream as a tool call and result`, async () => {
    await withModel([{ tool: "apply_patch", raw: PATCH }, { text: "Created hello.txt." }], async (gw, upstream) => {
      const { response } = await respond(gw, { ...SECOND_TURN, model, stream: true }, gw.tokens.oa);
      const message = (response.output as Json[])[0];
      assert.deepEqual((message.content as Json[]).map((p) => p.text), ["Created hello.txt."]);
      const sent = upstream.requests[0].body!;
      const messages = sent.messages as Json[];
      const result =
        "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nSuccess. Updated the following files:\nA hello.txt\n";
      if (kind === "Anthropic") {
        assert.deepEqual(messages.slice(-2), [
          {
            role: "assistant",
            content: [{ type: "tool_use", id: "call_patch_1", name: "apply_patch", input: { input: PATCH } }],
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "call_patch_1", content: result }] },
        ]);
      } else {
        const [call, tool] = messages.slice(-2);
        const [toolCall] = call.tool_calls as Json[];
        assert.deepEqual([toolCall.id, toolCall.type, (toolCall.function as Json).name], [
          "call_patch_1",
          "function",
          "apply_patch",
        ]);
        assert.deepEqual(JSON.parse(String((toolCall.function as Json).arguments)), { input: PATCH });
        assert.deepEqual(tool, { role: "tool", tool_call_id: "call_patch_1", content: result });
      }
    });
  });

  Deno.test(`Namespaced tools reach a ${kind} upstream flattened and their calls return under namespace and name`, async () => {
    await withModel([{ tool: "close_agent", args: { target: "agent-1" } }], async (gw, upstream) => {
      for (const stream of [true, false]) {
        const { response } = await respond(gw, { ...FIRST_TURN, model, stream }, gw.tokens.oa);
        const [call] = response.output as Json[];
        assert.deepEqual(
          [call.type, call.namespace, call.name, JSON.parse(String(call.arguments))],
          ["function_call", "multi_agent_v1", "close_agent", { target: "agent-1" }],
        );
      }
      const names = [...offeredTools(upstream.requests[0].body!).keys()];
      for (const inner of ["close_agent", "resume_agent", "send_input", "spawn_agent", "wait_agent"]) {
        assert.ok(names.includes(`multi_agent_v1__${inner}`), `${inner} is offered as multi_agent_v1__${inner}`);
      }
      assert.ok(names.every((n) => /^[a-zA-Z0-9_-]{1,64}$/.test(n)), "every name is one the upstream accepts");
      const spawn = offeredTools(upstream.requests[0].body!).get("multi_agent_v1__spawn_agent")!;
      assert.match(spawn.description, /^Tools for spawning and managing sub-agents\./, "the namespace says what it is");

      const history = [...FIRST_TURN.input, {
        type: "function_call",
        call_id: "call_ns_1",
        namespace: "multi_agent_v1",
        name: "close_agent",
        arguments: '{"target":"agent-1"}',
      }, { type: "function_call_output", call_id: "call_ns_1", output: "closed" }];
      await respond(gw, { ...FIRST_TURN, model, stream: false, input: history }, gw.tokens.oa);
      const messages = upstream.requests.at(-1)!.body!.messages as Json[];
      const call = JSON.stringify(messages.at(-2));
      assert.match(call, /"multi_agent_v1__close_agent"/, "history calls use the flattened name");
    });
  });

  Deno.test(`A tool call the ${kind} upstream cannot take is refused with a 400 naming the input item`, async () => {
    await withModel([], async (gw, upstream) => {
      const client = new OpenAI({
        apiKey: gw.tokens.oa,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        fetch: deadlineFetch(),
      });
      const input = [...FIRST_TURN.input, {
        type: "local_shell_call",
        call_id: "sh_1",
        status: "completed",
        action: { type: "exec", command: ["ls"] },
      }];
      const err = await client.responses.create({ ...FIRST_TURN, model, input, stream: false })
        .then(() => undefined, (e) => e);
      assert.ok(err instanceof OpenAI.BadRequestError, `got ${err}`);
      assert.equal(err.param, `input[${FIRST_TURN.input.length}]`);
      assert.match(err.message, /local_shell_call/);
      assert.equal(upstream.requests.length, 0);
    });
  });
}

for (const stream of [true, false]) {
  Deno.test(`An upstream with native_custom_tools gets apply_patch as a custom tool and its call returns raw (${stream ? "streamed" : "whole"})`, async () => {
    await withModel([{ tool: "apply_patch", raw: PATCH }, { text: "Done." }], async (gw, upstream) => {
      const token = (await gw.store.createToken({ group: "native" })).secret;
      const { response } = await respond(gw, { ...FIRST_TURN, model: "gpt-native", stream }, token);
      const [call] = response.output as Json[];
      assert.deepEqual([call.type, call.name, call.input], ["custom_tool_call", "apply_patch", PATCH]);
      const native = offeredTools(upstream.requests[0].body!).get("apply_patch")!.native!;
      assert.deepEqual((native.format as Json).type, "grammar");
      assert.deepEqual(((native.format as Json).grammar as Json).syntax, "lark");
      assert.match(
        String(((native.format as Json).grammar as Json).definition),
        /^start: begin_patch hunk\+ end_patch/,
      );

      await respond(gw, { ...SECOND_TURN, model: "gpt-native", stream }, token);
      const messages = upstream.requests[1].body!.messages as Json[];
      assert.deepEqual((messages.at(-2)!.tool_calls as Json[])[0], {
        id: "call_patch_1",
        type: "custom",
        custom: { name: "apply_patch", input: PATCH },
      });
    });
  });
}

Deno.test("OpenAI SDK responses.stream() reads a custom_tool_call from an Anthropic upstream", async () => {
  await withModel([{ tool: "apply_patch", raw: PATCH }], async (gw) => {
    const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
    const final = await client.responses.stream({ ...FIRST_TURN, model: "claude-test" }).finalResponse();
    const call = final.output[0];
    assert.ok(call.type === "custom_tool_call", `got ${call.type}`);
    assert.equal(call.input, PATCH);
  });
});

const CHAT_CUSTOM_TOOL = {
  type: "custom" as const,
  custom: { name: "apply_patch", description: "Edit files.", format: { type: "text" as const } },
};

Deno.test("OpenAI SDK chat custom tools reach an Anthropic upstream as functions and return as custom calls", async () => {
  await withModel([{ tool: "apply_patch", raw: PATCH }, { text: "Done." }], async (gw, upstream) => {
    const client = new OpenAI({ apiKey: gw.tokens.oa, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "Make hello.txt" }];
    const whole = await client.chat.completions.create({ model: "claude-test", messages, tools: [CHAT_CUSTOM_TOOL] });
    const streamed = await client.chat.completions.stream({ model: "claude-test", messages, tools: [CHAT_CUSTOM_TOOL] })
      .finalChatCompletion();
    for (const completion of [whole, streamed]) {
      const [call] = completion.choices[0].message.tool_calls!;
      assert.ok(call.type === "custom", `got ${call.type}`);
      assert.deepEqual([call.custom.name, call.custom.input], ["apply_patch", PATCH]);
      assert.equal(completion.choices[0].finish_reason, "tool_calls");
    }
    const tools = offeredTools(upstream.requests[0].body!);
    assert.deepEqual(Object.keys((tools.get("apply_patch")!.schema as { properties: Json }).properties), ["input"]);

    const next = await client.chat.completions.create({
      model: "claude-test",
      tools: [CHAT_CUSTOM_TOOL],
      messages: [...messages, whole.choices[0].message, {
        role: "tool",
        tool_call_id: whole.choices[0].message.tool_calls![0].id,
        content: "Applied.",
      }],
    });
    assert.equal(next.choices[0].message.content, "Done.");
    const sent = upstream.requests[2].body!.messages as Json[];
    assert.deepEqual((sent[1].content as Json[])[0].input, { input: PATCH });
  });
});
