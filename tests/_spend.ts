/** @module Test wiring for spend: priced deployments beside the test config's, and a group that uses them. */
import { type FakeUpstream, jsonReply, sseReply } from "./_fake_upstream.ts";
import { fixture, startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** claude-priced: 3 / 15 / 0.3 / 3.75 per million; gpt-priced: 2 / 8 / 0.5 and free cache writes. */
export function pricedUpstreams(url: string): string {
  return `  - name: priced-a
    protocol: anthropic
    base_url: ${url}/anth/v1
    api_key_env: TEST_ANTHROPIC_KEY
    models:
      - { id: claude-priced, upstream_id: claude-test, price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } }
  - name: priced-o
    protocol: openai
    base_url: ${url}/oai/v1
    api_key_env: TEST_OPENAI_KEY
    models:
      - { id: gpt-priced, upstream_id: gpt-test, price: { input: 2, output: 8, cache_read: 0.5 } }
`;
}

/** The group the spend tests' tokens are in: both priced models and an unpriced one. */
export const SPEND_GROUP = "  - { name: spend, listing: auto, models: [claude-priced, gpt-priced, claude-test] }";

/** A gateway with the priced deployments, the spend group (plus `extraGroups`) and a clock frozen mid-minute. */
export function spendGateway(upstream: FakeUpstream, options: StartOptions = {}): Promise<TestGateway> {
  return startGateway(upstream.url, {
    now: frozenClock(),
    ...options,
    extraUpstreams: pricedUpstreams(upstream.url) + (options.extraUpstreams ?? ""),
    extraGroups: [SPEND_GROUP, options.extraGroups].filter(Boolean).join("\n"),
  });
}

/** A clock frozen mid-minute, so no window rolls over during a test. */
export function frozenClock(): () => Date {
  const now = Date.now();
  const at = now - (now % 60_000) + 30_000;
  return () => new Date(at);
}

/** Answers both upstream kinds with the cache fixtures: Anthropic 20 in, 7 out, 80 read; chat 100 prompt (80 cached), 7 out. */
export function answerWithCacheUsage(upstream: FakeUpstream): void {
  upstream.routes.set(
    "POST /anth/v1/messages",
    (seen) =>
      seen.body?.stream
        ? sseReply(fixture("anthropic/usage_cache.sse"))
        : jsonReply(JSON.parse(fixture("anthropic/usage_cache.json"))),
  );
  upstream.routes.set(
    "POST /oai/v1/chat/completions",
    (seen) =>
      seen.body?.stream
        ? sseReply(fixture("openai-chat/usage_cache.sse"))
        : jsonReply(JSON.parse(fixture("openai-chat/usage_cache.json"))),
  );
}

/** The cost of one answer of {@linkcode answerWithCacheUsage}: 20*3 + 7*15 + 80*0.3 per million tokens. */
export const ANTHROPIC_CACHE_COST = "0.000189";
/** The same for the chat answer: 20*2 + 7*8 + 80*0.5 per million tokens. */
export const CHAT_CACHE_COST = "0.000136";
