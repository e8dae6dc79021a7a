/** @module Shared pieces of the translator unit tests: a deterministic context, sample requests, a stream driver. */
import type { Protocol } from "../src/core/types.ts";
import { PROTOCOLS } from "../src/protocols/registry.ts";
import { translateSse } from "../src/relay/stream.ts";
import { type Pair, pickTranslator, type TranslateContext, type Translator } from "../src/translate/mod.ts";

/** A pair of two different protocols and the translator the registry picks for it. */
export interface TranslatedPair {
  pair: Pair;
  client: Protocol;
  upstream: Protocol;
  translator: Translator;
}

/** Every pair of two different protocols, each with its translator (a pair the registry cannot serve fails here). */
export function translatedPairs(): TranslatedPair[] {
  const names = Object.keys(PROTOCOLS) as Protocol[];
  return names.flatMap((client) =>
    names.filter((upstream) => upstream !== client).map((upstream) => {
      const translator = pickTranslator(client, upstream);
      if (!translator) throw new Error(`no translator for ${client}->${upstream}`);
      return { pair: `${client}->${upstream}` as const, client, upstream, translator };
    })
  );
}

/** A deterministic context; `logs` collects what the translator reports dropping. */
export function testContext(logs: Record<string, unknown>[] = []): TranslateContext {
  return {
    model: "public-model",
    upstreamModel: "upstream-model",
    requestId: "req_0123456789abcdef01234567",
    now: () => 1767225600000,
    log: (line) => logs.push(line),
    defaultMaxTokens: 4096,
  };
}

const TOOLS_SCHEMA = { type: "object", properties: { tz: { type: "string" } } };

/** A streamed request per client protocol, with tools, so each translator sets its request-side state. */
export const SAMPLE_REQUESTS: Record<Protocol, Record<string, unknown>> = {
  anthropic: {
    model: "public-model",
    max_tokens: 64,
    stream: true,
    messages: [{ role: "user", content: "What time is it?" }],
    tools: [{ name: "get_time", input_schema: TOOLS_SCHEMA }, { name: "get_weather", input_schema: TOOLS_SCHEMA }],
  },
  "openai-chat": {
    model: "public-model",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "What time is it?" }],
    tools: [{ type: "function", function: { name: "get_time", parameters: TOOLS_SCHEMA } }],
  },
  "openai-responses": {
    model: "public-model",
    stream: true,
    store: false,
    input: "What time is it?",
    tools: [{ type: "function", name: "get_time", parameters: TOOLS_SCHEMA, strict: false }],
  },
  gemini: {
    model: "public-model",
    stream: true,
    contents: [{ role: "user", parts: [{ text: "What time is it?" }] }],
    tools: [{ functionDeclarations: [{ name: "get_time", parameters: TOOLS_SCHEMA }] }],
  },
};

/** Runs a fixture's bytes, cut into `chunks`, through the translator's stream and the real SSE pipeline. */
export async function translateFixture(
  translator: Translator,
  client: Protocol,
  chunks: Uint8Array[],
): Promise<string> {
  const translation = translator(testContext());
  translation.request(structuredClone(SAMPLE_REQUESTS[client]));
  const body = ReadableStream.from(chunks);
  return await new Response(translateSse(body, translation.stream!(), client)).text();
}
