/**
 * @module One case list run against every registered translator: each recorded upstream fixture, streamed and
 * whole, must reach the client as a valid answer in its own protocol that says the same thing.
 */
import assert from "node:assert/strict";
import { SseParser } from "../../src/core/sse.ts";
import type { Protocol } from "../../src/core/types.ts";
import { hasOwnTranslator, pickTranslator } from "../../src/translate/mod.ts";
import {
  readAnthropicJson,
  readAnthropicStream,
  readChatJson,
  readChatStream,
  type Summary,
} from "../_client_readers.ts";
import { readGeminiJson, readGeminiStream } from "../_gemini_reader.ts";
import { readResponsesJson, readResponsesStream } from "../_responses_reader.ts";
import { fixture } from "../_helpers.ts";
import { SAMPLE_REQUESTS, testContext, translatedPairs, translateFixture } from "../_translate_helpers.ts";

const STREAM_READERS: Record<Protocol, (events: ReturnType<SseParser["push"]>) => Summary> = {
  anthropic: readAnthropicStream,
  "openai-chat": readChatStream,
  "openai-responses": readResponsesStream,
  gemini: readGeminiStream,
};

const JSON_READERS: Record<Protocol, (body: Record<string, unknown>) => Summary> = {
  anthropic: readAnthropicJson,
  "openai-chat": readChatJson,
  "openai-responses": readResponsesJson,
  gemini: readGeminiJson,
};

/** The summary a case expects; tool ids differ by protocol and are checked by the readers instead. */
type Want = Partial<Omit<Summary, "tools" | "error">> & { tools?: { name: string; args: unknown }[]; error?: RegExp };

interface Case {
  name: string;
  /** The fixture's file name without extension, when it differs from the case name. */
  fixture?: string;
  want: Want;
  /** Further checks on the summary. */
  check?: (got: Summary) => void;
  /** Whole-answer fixtures exist for everything but broken streams. */
  streamOnly?: boolean;
}

const TIME = { name: "get_time", args: { tz: "UTC" } };

const CASES: Case[] = [
  {
    name: "text",
    want: { text: "Héllo, wörld 🌍", tools: [], stop: "end", usage: { input: 12, output: 5, cached: 0 } },
  },
  { name: "tool_use", want: { text: "Let me check.", tools: [TIME], stop: "tool" } },
  {
    name: "parallel_tools",
    want: { text: "", tools: [TIME, { name: "get_weather", args: { city: "Paris" } }], stop: "tool" },
  },
  { name: "reasoning", want: { reasoning: "Thinking about it.", text: "42", stop: "end" } },
  { name: "usage_cache", want: { text: "Cached.", usage: { input: 100, output: 7, cached: 80 } } },
  { name: "max_tokens", want: { text: "Trunc", stop: "length" } },
  { name: "empty", want: { text: "", reasoning: "", tools: [], stop: "end" } },
  {
    name: "thinking signature",
    fixture: "reasoning",
    want: { reasoning: "Thinking about it." },
    check: (got) => assert.equal(got.sealed.length, 1, "the signature reaches the client"),
  },
  { name: "error_mid", want: { error: /Upstream overloaded/ }, streamOnly: true },
  { name: "error_first", want: { error: /Upstream overloaded/ }, streamOnly: true },
  { name: "cut", want: { error: /ended before/ }, streamOnly: true },
];

const NO_SIGNATURE = "chat upstreams produce reasoning without a signature";
const GEMINI_SIGNATURE = "Gemini's signatures travel on function calls, not on thoughts";

/** Pairs and cases a translator cannot meet, each with its reason. */
const SKIPS: Record<string, string> = {
  "anthropic->openai-chat:thinking signature": NO_SIGNATURE,
  "openai-responses->openai-chat:thinking signature": NO_SIGNATURE,
  "openai-chat->anthropic:thinking signature": "chat completions has no field to carry a thinking signature",
  "gemini->openai-chat:thinking signature": NO_SIGNATURE,
  "anthropic->gemini:thinking signature": GEMINI_SIGNATURE,
  "openai-chat->gemini:thinking signature": GEMINI_SIGNATURE,
  "openai-responses->gemini:thinking signature": GEMINI_SIGNATURE,
  "openai-chat->openai-responses:thinking signature": "chat completions has no field to carry a reasoning item",
};

function compare(got: Summary, want: Want): void {
  for (const [key, value] of Object.entries(want)) {
    if (key === "tools") {
      assert.deepEqual(got.tools.map(({ name, args }) => ({ name, args })), value, "tools");
    } else if (key === "error") assert.match(String(got.error), value as RegExp);
    else assert.deepEqual(got[key as keyof Summary], value, key);
  }
  if (want.error === undefined) assert.equal(got.error, undefined, "no error");
}

for (const { pair, client, upstream, translator } of translatedPairs()) {
  for (const c of CASES) {
    const skip = SKIPS[`${pair}:${c.name}`];
    Deno.test({
      name: `${pair} streams the ${c.name} fixture as a valid ${client} stream${skip ? ` (skipped: ${skip})` : ""}`,
      ignore: skip !== undefined,
      async fn() {
        const bytes = new TextEncoder().encode(fixture(`${upstream}/${c.fixture ?? c.name}.sse`));
        const text = await translateFixture(translator, client, [bytes]);
        const got = STREAM_READERS[client](new SseParser().push(text));
        compare(got, c.want);
        c.check?.(got);
      },
    });
    if (c.streamOnly) continue;
    Deno.test({
      name: `${pair} translates the ${c.name} fixture as a valid ${client} body${skip ? ` (skipped: ${skip})` : ""}`,
      ignore: skip !== undefined,
      fn() {
        const translation = translator(testContext());
        translation.request({ ...structuredClone(SAMPLE_REQUESTS[client]), stream: false });
        const body = translation.response(JSON.parse(fixture(`${upstream}/${c.fixture ?? c.name}.json`)));
        const got = JSON_READERS[client](body);
        compare(got, c.want);
        c.check?.(got);
      },
    });
  }
}

Deno.test("a protocol onto itself passes the upstream's answer through as it came", () => {
  for (const protocol of Object.keys(STREAM_READERS) as Protocol[]) {
    const translation = pickTranslator(protocol, protocol)!(testContext());
    const sent = translation.request({ ...structuredClone(SAMPLE_REQUESTS[protocol]), stream: false });
    assert.equal(sent.model, "upstream-model", protocol);
    const answer = JSON.parse(fixture(`${protocol}/text.json`));
    assert.equal(translation.response(answer), answer, protocol);
    assert.equal(translation.stream, undefined, `${protocol}: stream bytes are relayed unchanged`);
  }
});

Deno.test("a pair without a translator of its own goes through Messages, its client's half told where it goes", () => {
  const composed = translatedPairs().filter(({ pair }) => !hasOwnTranslator(pair));
  assert.ok(composed.length > 0, "some pairs are composed");
  for (const { pair, client, upstream, translator } of composed) {
    const request = { ...structuredClone(SAMPLE_REQUESTS[client]), stream: false };
    const outer = pickTranslator(client, "anthropic")!({ ...testContext(), towards: upstream });
    const inner = pickTranslator("anthropic", upstream)!(testContext());
    const whole = translator(testContext());
    assert.deepEqual(
      whole.request(structuredClone(request)),
      inner.request(outer.request(structuredClone(request))),
      pair,
    );
    const answer = JSON.parse(fixture(`${upstream}/tool_use.json`));
    assert.deepEqual(whole.response(structuredClone(answer)), outer.response(inner.response(answer)), pair);
  }
});
