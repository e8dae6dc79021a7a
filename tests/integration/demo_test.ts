/**
 * @module The demo upstream of the example config, through the official SDKs of all four client protocols, streamed
 * and not, and a tool loop on each: answers with usage, no key set and no fetch made.
 */
import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI, Type } from "@google/genai";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { deadlineFetch, startGateway, type TestGateway, within } from "../_helpers.ts";
import { ROOT } from "../_process.ts";
import { REQUEST_DEADLINE_MS } from "../_reads.ts";

const MODEL = "demo-model";
const GREETING = /^Hello from modelgate's demo model\. .*You wrote: "Hi there"/;
const FILES = "notes.txt README.md";

/** The example config's gateway, with a fetch that fails the test if anything is fetched. */
async function withDemo(
  run: (gw: TestGateway) => Promise<void>,
): Promise<void> {
  const fetches: string[] = [];
  const fetch = ((input: RequestInfo | URL) => {
    fetches.push(String(input));
    return Promise.reject(new Error("the demo upstream fetched"));
  }) as typeof globalThis.fetch;
  const configYaml = await Deno.readTextFile(
    `${ROOT}config/gateway.example.yaml`,
  );
  await using gw = await startGateway("", { configYaml, fetch });
  await run(gw);
  assert.deepEqual(fetches, []);
  const generated = gw.exchanges.filter((e) => !e.route.endsWith("count_tokens"));
  const usage = generated.map((
    e,
  ) => [e.status, e.upstream, (e.usage?.output_tokens ?? 0) > 0]);
  assert.deepEqual(
    usage,
    generated.map(() => [200, "demo", true]),
    "every answer came from the demo, with usage",
  );
}

function anthropic(gw: TestGateway): Anthropic {
  return new Anthropic({
    apiKey: gw.tokens.default,
    baseURL: gw.url,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
}

function openai(gw: TestGateway): OpenAI {
  return new OpenAI({
    apiKey: gw.tokens.default,
    baseURL: `${gw.url}/v1`,
    maxRetries: 0,
    fetch: deadlineFetch(),
  });
}

function gemini(gw: TestGateway): GoogleGenAI {
  return new GoogleGenAI({
    apiKey: gw.tokens.default,
    httpOptions: { baseUrl: gw.url, timeout: REQUEST_DEADLINE_MS },
  });
}

const LIST_FILES = {
  name: "list_files",
  description: "Lists the files of a folder",
  schema: {
    type: "object" as const,
    properties: { path: { type: "string" } },
    required: ["path"],
  },
};

Deno.test("demo: Anthropic SDK, messages.create and messages.stream, and count_tokens", async () => {
  await withDemo(async (gw) => {
    const client = anthropic(gw);
    const body = {
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: "user" as const, content: "Hi there" }],
    };
    const message = await client.messages.create(body);
    assert.match(
      message.content[0].type === "text" ? message.content[0].text : "",
      GREETING,
    );
    assert.equal(message.stop_reason, "end_turn");
    const stream = client.messages.stream(body);
    const deltas: string[] = [];
    stream.on("text", (text) => deltas.push(text));
    const streamed = await stream.finalMessage();
    assert.ok(deltas.length > 1, "the text came in several deltas");
    assert.deepEqual(streamed.content, message.content);
    assert.deepEqual(streamed.usage.output_tokens, message.usage.output_tokens);
    const count = await client.messages.countTokens({
      model: MODEL,
      messages: body.messages,
    });
    assert.ok(count.input_tokens > 0);
  });
});

Deno.test("demo: Anthropic SDK, a tool loop, the call streamed", async () => {
  await withDemo(async (gw) => {
    const client = anthropic(gw);
    const tools = [{
      name: LIST_FILES.name,
      description: LIST_FILES.description,
      input_schema: LIST_FILES.schema,
    }];
    const ask = { role: "user" as const, content: "What is here?" };
    const call = await client.messages.stream({
      model: MODEL,
      max_tokens: 256,
      tools,
      messages: [ask],
    }).finalMessage();
    assert.equal(call.stop_reason, "tool_use");
    const use = call.content.find((block) => block.type === "tool_use");
    assert.ok(use?.type === "tool_use");
    assert.deepEqual([use.name, use.input], ["list_files", { path: "." }]);
    const result = {
      type: "tool_result" as const,
      tool_use_id: use.id,
      content: FILES,
    };
    const messages = [ask, {
      role: "assistant" as const,
      content: call.content,
    }, { role: "user" as const, content: [result] }];
    const answer = await client.messages.create({
      model: MODEL,
      max_tokens: 256,
      tools,
      messages,
    });
    assert.match(
      answer.content[0].type === "text" ? answer.content[0].text : "",
      /^list_files answered: "notes\.txt/,
    );
  });
});

Deno.test("demo: OpenAI SDK, chat completions created and streamed, and a tool loop", async () => {
  await withDemo(async (gw) => {
    const client = openai(gw);
    const messages = [{ role: "user" as const, content: "Hi there" }];
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages,
    });
    assert.match(completion.choices[0].message.content ?? "", GREETING);
    const stream = client.chat.completions.stream({
      model: MODEL,
      messages,
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    assert.equal(
      final.choices[0].message.content,
      completion.choices[0].message.content,
    );
    assert.ok((final.usage?.completion_tokens ?? 0) > 0);
    const tools = [{
      type: "function" as const,
      function: {
        name: LIST_FILES.name,
        description: LIST_FILES.description,
        parameters: LIST_FILES.schema,
      },
    }];
    const ask = { role: "user" as const, content: "What is here?" };
    const call = await client.chat.completions.create({
      model: MODEL,
      messages: [ask],
      tools,
    });
    assert.equal(call.choices[0].finish_reason, "tool_calls");
    const toolCall = call.choices[0].message.tool_calls?.[0];
    assert.ok(toolCall?.type === "function");
    assert.deepEqual(JSON.parse(toolCall.function.arguments), { path: "." });
    const answer = await client.chat.completions.create({
      model: MODEL,
      tools,
      messages: [ask, call.choices[0].message, {
        role: "tool",
        tool_call_id: toolCall.id,
        content: FILES,
      }],
    });
    assert.match(
      answer.choices[0].message.content ?? "",
      /^list_files answered: "notes\.txt README\.md"/,
    );
  });
});

Deno.test("demo: OpenAI SDK, responses created and streamed, and a tool loop", async () => {
  await withDemo(async (gw) => {
    const client = openai(gw);
    const response = await client.responses.create({
      model: MODEL,
      input: "Hi there",
      store: false,
    });
    assert.match(response.output_text, GREETING);
    const stream = client.responses.stream({
      model: MODEL,
      input: "Hi there",
      store: false,
    });
    const final = await stream.finalResponse();
    assert.equal(final.output_text, response.output_text);
    assert.ok((final.usage?.output_tokens ?? 0) > 0);
    const tools = [{
      type: "function" as const,
      name: LIST_FILES.name,
      description: LIST_FILES.description,
      parameters: LIST_FILES.schema,
      strict: false,
    }];
    const call = await client.responses.create({
      model: MODEL,
      input: "What is here?",
      tools,
      store: false,
    });
    const item = call.output.find((o) => o.type === "function_call");
    assert.ok(item?.type === "function_call");
    assert.deepEqual([item.name, JSON.parse(item.arguments)], ["list_files", {
      path: ".",
    }]);
    const answer = await client.responses.create({
      model: MODEL,
      tools,
      store: false,
      input: [
        { role: "user", content: "What is here?" },
        item,
        { type: "function_call_output", call_id: item.call_id, output: FILES },
      ],
    });
    assert.match(
      answer.output_text,
      /^list_files answered: "notes\.txt README\.md"/,
    );
  });
});

Deno.test("demo: Google Gen AI SDK, generateContent and its stream, and a function-call round trip", async () => {
  await withDemo(async (gw) => {
    const ai = gemini(gw);
    const answer = await within(
      ai.models.generateContent({ model: MODEL, contents: "Hi there" }),
      30_000,
      "generate",
    );
    assert.match(answer.text ?? "", GREETING);
    assert.ok((answer.usageMetadata?.candidatesTokenCount ?? 0) > 0);
    const pieces: string[] = [];
    for await (
      const chunk of await ai.models.generateContentStream({
        model: MODEL,
        contents: "Hi there",
      })
    ) {
      pieces.push(chunk.text ?? "");
    }
    assert.ok(pieces.length > 1);
    assert.equal(pieces.join(""), answer.text);
    const declaration = {
      name: LIST_FILES.name,
      description: LIST_FILES.description,
      parameters: {
        type: Type.OBJECT,
        properties: { path: { type: Type.STRING } },
        required: ["path"],
      },
    };
    const config = { tools: [{ functionDeclarations: [declaration] }] };
    const ask = { role: "user", parts: [{ text: "What is here?" }] };
    const call = await ai.models.generateContent({
      model: MODEL,
      contents: [ask],
      config,
    });
    const functionCall = call.functionCalls?.[0];
    assert.deepEqual([functionCall?.name, functionCall?.args], ["list_files", {
      path: ".",
    }]);
    const reply = {
      functionResponse: {
        id: functionCall?.id,
        name: "list_files",
        response: { output: FILES },
      },
    };
    const contents = [ask, call.candidates![0].content!, {
      role: "user",
      parts: [reply],
    }];
    const done = await ai.models.generateContent({
      model: MODEL,
      contents,
      config,
    });
    assert.match(
      done.text ?? "",
      /^list_files answered: ".*notes\.txt README\.md/,
    );
  });
});
