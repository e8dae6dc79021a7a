/**
 * @module Guardrails over real HTTP with the official SDKs against an upstream that echoes what it received in small
 * deltas: each kind masked on input (the upstream's record holds placeholders only), the same placeholder on two
 * turns, restore in text and tool-call arguments, a key the model leaks masked on every protocol streamed and not, a
 * group without rules untouched, and the request log and logs free of the matches.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { GoogleGenAI } from "@google/genai";
import { echoing, LEAKED_KEY } from "../_echo_upstream.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { guardedConfig } from "../_guard_config.ts";
import { deadlineFetch, startGateway } from "../_helpers.ts";

/** One sample of each kind, as a developer's repository or a customer fixture holds it. */
const SAMPLES: Record<string, string> = {
  aws_access_key: "AKIAQWERTYUIOPASDFGH",
  github_token: "ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig",
  slack_token: "xoxb-64724751167-7191336589025-x4gN2UhlLqWMBfqX6x9TRRHU",
  google_api_key: "AIzar6p7qWdGoRO2EbCePj_5Hd0Ho4Cd9tHZvIC",
  openai_key:
    "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",
  anthropic_key:
    "sk-ant-api03-xpTW_5wyDLACBudHJmKqOQBTTjLZIuW05CSCKP5c5MLBZRl0jQO4nt19enW3ViGV-7mOGIdQ8A13A30TtBNcnqsM1ZfpfAA",
  stripe_key: "sk_live_7NLRwHlZvuCjp0xEFZo1zcfI",
  private_key:
    "-----BEGIN PRIVATE KEY-----\nqgwzLOrx3dnqrlIQlg5JqDz9daDAqj2QUKgrMZX0x6iWfMlYuk6osgBMkiNHelCx\n-----END PRIVATE KEY-----",
  jwt:
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUiLCJpYXQiOjE3MDAwMDAwMDB9.XZYBxZZ7Q6FQgRuauTvmwmKNEG72344kSudI7-xrEgx",
  email: "jane.doe@acme-corp.io",
  phone: "+44 20 7946 0958",
  card: "4111 1111 1111 1111",
  iban: "DE89 3704 0044 0532 0130 00",
  us_ssn: "512-44-7890",
};
const SECRETS = Object.keys(SAMPLES).slice(0, 9);
const PROMPT = Object.entries(SAMPLES).map(([kind, value]) => `${kind}: ${value}`).join("\n");

function anthropicClient(url: string, token: string): Anthropic {
  return new Anthropic({ apiKey: token, baseURL: url, maxRetries: 0, fetch: deadlineFetch() });
}
function openaiClient(url: string, token: string): OpenAI {
  return new OpenAI({ apiKey: token, baseURL: `${url}/v1`, maxRetries: 0, fetch: deadlineFetch() });
}

Deno.test("guardrails: each kind is masked on input, the upstream sees placeholders only, and restore gives the secrets back", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url), admin: true });
  const client = anthropicClient(gw.url, gw.tokens.default);
  const message = await client.messages.create({
    model: "claude-test",
    max_tokens: 64,
    system: `Never repeat ${SAMPLES.github_token}`,
    messages: [{ role: "user", content: PROMPT }],
  });
  const seen = upstream.requests[0].raw;
  for (const [kind, value] of Object.entries(SAMPLES)) {
    assert.ok(!seen.includes(JSON.stringify(value).slice(1, -1)), `${kind} reached the upstream`);
    assert.match(seen, new RegExp(`\\[REDACTED:${kind}:[0-9a-f]{6}\\]`), kind);
  }
  // The system prompt is input too, and the same key has the same placeholder there.
  const system = (upstream.requests[0].body!.system as string).match(/\[REDACTED:github_token:[0-9a-f]{6}\]/)![0];
  assert.ok(seen.split(system).length - 1 >= 2);
  const text = message.content[0].type === "text" ? message.content[0].text : "";
  // The secrets rule restores; the personal-data rule does not.
  for (const kind of SECRETS) assert.ok(text.includes(SAMPLES[kind]), `${kind} was not restored`);
  for (const kind of ["email", "card", "iban", "us_ssn", "phone"]) {
    assert.ok(!text.includes(SAMPLES[kind]), kind);
    assert.match(text, new RegExp(`\\[REDACTED:${kind}:`));
  }
  const [exchange] = gw.exchanges;
  const hits = new Map(exchange.guardrails!.map((hit) => [`${hit.rule}/${hit.kind}/${hit.scope}`, hit]));
  assert.equal(hits.get("no-secrets/github_token/input")?.count, 2);
  assert.equal(hits.get("pii/card/input")?.action, "mask");
  // The request log, the log line and the metric say what was done, and none of them holds a match.
  await gw.flush();
  const log = (await (await gw.admin("GET", "/admin/requests?limit=1")).json()).data[0];
  assert.deepEqual(log.guardrails, exchange.guardrails);
  const line = gw.logs.find((entry) => entry.guardrails !== undefined)!;
  assert.deepEqual(line.guardrails, exchange.guardrails);
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  assert.match(
    metrics,
    /modelgate_guardrail_hits_total\{rule="no-secrets",kind="github_token",action="mask",scope="input"\} 2/,
  );
  assert.match(metrics, /modelgate_guardrail_hits_total\{rule="pii",kind="iban",action="mask",scope="input"\} 1/);
  const record = JSON.stringify([gw.logs, gw.exchanges, log, metrics]);
  for (const [kind, value] of Object.entries(SAMPLES)) assert.ok(!record.includes(value), `${kind} in the log`);
});

Deno.test("guardrails: the same secret has the same placeholder on two turns, another secret another one", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
  const client = openaiClient(gw.url, gw.tokens.default);
  for (const key of [SAMPLES.aws_access_key, SAMPLES.aws_access_key, "AKIAZXCVBNMLKJHGFDSA"]) {
    await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: `key ${key}` }] });
  }
  const placeholders = upstream.requests.map((seen) => seen.raw.match(/\[REDACTED:aws_access_key:[0-9a-f]{6}\]/)![0]);
  assert.equal(placeholders[0], placeholders[1]);
  assert.notEqual(placeholders[0], placeholders[2]);
});

/** What each client gets when it asks the echoing model to leak a key, streamed or not. */
const CLIENTS: { name: string; ask(url: string, token: string, stream: boolean, text: string): Promise<string> }[] = [
  ...["claude-test", "gpt-test"].map((model) => ({
    name: `Anthropic SDK on ${model}`,
    async ask(url: string, token: string, stream: boolean, text: string) {
      const client = anthropicClient(url, token);
      const body = { model, max_tokens: 64, messages: [{ role: "user" as const, content: text }] };
      const message = stream ? await client.messages.stream(body).finalMessage() : await client.messages.create(body);
      return JSON.stringify(message.content);
    },
  })),
  ...["gpt-test", "claude-test"].map((model) => ({
    name: `OpenAI chat SDK on ${model}`,
    async ask(url: string, token: string, stream: boolean, text: string) {
      const client = openaiClient(url, token);
      const messages = [{ role: "user" as const, content: text }];
      if (!stream) {
        return JSON.stringify((await client.chat.completions.create({ model, messages })).choices[0].message);
      }
      const run = client.chat.completions.stream({ model, messages });
      return JSON.stringify((await run.finalChatCompletion()).choices[0].message);
    },
  })),
  ...["gpt-test", "claude-test"].map((model) => ({
    name: `OpenAI Responses SDK on ${model}`,
    async ask(url: string, token: string, stream: boolean, text: string) {
      const client = openaiClient(url, token);
      if (!stream) return JSON.stringify((await client.responses.create({ model, input: text })).output);
      const run = client.responses.stream({ model, input: text });
      let deltas = "";
      const numbers: number[] = [];
      run.on("event", (event) => numbers.push(event.sequence_number));
      run.on("response.output_text.delta", (event) => deltas += event.delta);
      const final = await run.finalResponse();
      // The events the guardrails add are numbered in turn: every number once, in order.
      assert.ok(numbers.length > 10, String(numbers.length));
      assert.deepEqual(numbers, numbers.map((_, i) => numbers[0] + i));
      return deltas + JSON.stringify(final.output);
    },
  })),
  {
    name: "Gen AI SDK on claude-test",
    async ask(url: string, token: string, stream: boolean, text: string) {
      const ai = new GoogleGenAI({ apiKey: token, httpOptions: { baseUrl: url, timeout: 30_000 } });
      const request = { model: "claude-test", contents: text };
      if (!stream) return JSON.stringify((await ai.models.generateContent(request)).candidates);
      let all = "";
      for await (const chunk of await ai.models.generateContentStream(request)) all += JSON.stringify(chunk.candidates);
      return all;
    },
  },
];

for (const client of CLIENTS) {
  for (const stream of [false, true]) {
    Deno.test(`guardrails: ${client.name}${stream ? ", streamed" : ""}: a key the model leaks is masked, a placeholder it repeats restored`, async () => {
      await using upstream = fakeUpstream();
      echoing(upstream);
      await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
      const answer = await client.ask(
        gw.url,
        gw.tokens.default,
        stream,
        `please leak; my key is ${SAMPLES.stripe_key}`,
      );
      assert.ok(!answer.includes(LEAKED_KEY), answer);
      assert.match(answer, /\[REDACTED:aws_access_key:[0-9a-f]{6}\]/);
      assert.ok(answer.includes(SAMPLES.stripe_key), "the placeholder was not restored");
      assert.ok(!upstream.requests[0].raw.includes(SAMPLES.stripe_key));
      const hit = gw.exchanges[0].guardrails!.find((h) => h.scope === "output");
      assert.deepEqual(hit, { rule: "no-secrets", kind: "aws_access_key", action: "mask", scope: "output", count: 1 });
    });
  }
}

Deno.test("guardrails: a tool call's arguments get the restored secret, streamed and not, on both protocols", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
  const anthropic = anthropicClient(gw.url, gw.tokens.default);
  const tools = [{ name: "write", description: "Writes", input_schema: { type: "object" as const } }];
  const key = SAMPLES.private_key;
  const body = {
    model: "claude-test",
    max_tokens: 64,
    tools,
    messages: [{ role: "user" as const, content: `tool ${key}` }],
  };
  for (const message of [await anthropic.messages.create(body), await anthropic.messages.stream(body).finalMessage()]) {
    const call = message.content.find((block) => block.type === "tool_use")!;
    assert.equal((call.input as { content: string }).content, `I read: tool ${key}`);
  }
  const openai = openaiClient(gw.url, gw.tokens.default);
  const chat = { model: "gpt-test", messages: [{ role: "user" as const, content: `tool ${key}` }] };
  const whole = await openai.chat.completions.create(chat);
  const streamed = await openai.chat.completions.stream(chat).finalChatCompletion();
  for (const completion of [whole, streamed]) {
    const call = completion.choices[0].message.tool_calls![0];
    assert.equal(call.type === "function" && JSON.parse(call.function.arguments).content, `I read: tool ${key}`);
  }
  for (const seen of upstream.requests) assert.ok(!seen.raw.includes("qgwzLOrx3dnqrlIQlg5JqDz9daDAqj2QUKgrMZX0x6iW"));
});

Deno.test("guardrails: a group without rules is untouched, its body sent byte for byte", async () => {
  await using upstream = fakeUpstream();
  echoing(upstream);
  await using gw = await startGateway(upstream.url, { configYaml: guardedConfig(upstream.url) });
  const body = JSON.stringify({
    model: "claude-test",
    max_tokens: 8,
    messages: [{ role: "user", content: `leak ${PROMPT}` }],
  });
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": gw.tokens.auto, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body,
  });
  const answer = await res.text();
  assert.equal(upstream.requests[0].raw, body);
  assert.ok(answer.includes(LEAKED_KEY));
  assert.equal(gw.exchanges[0].guardrails, undefined);
});
