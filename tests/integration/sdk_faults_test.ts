/**
 * @module The official Anthropic and OpenAI SDKs, with their default retries, run every fault a model can have against
 * one upstream that also serves a healthy model; afterwards 200 concurrent requests to the healthy model all succeed.
 * Short retry-after values and timeouts keep it to a few seconds.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { controlledStream, fakeUpstream, hang, jsonReply, type Responder, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, deadlineFetch, fixture, startGateway, within } from "../_helpers.ts";

const SSE = fixture("anthropic_text.sse");
/** The stream up to its first text delta: enough for a client of either protocol to have received something. */
const HEAD = SSE.split("\n\n").slice(0, 4).join("\n\n") + "\n\n";
const RETRY_SOON = { "retry-after-ms": "10" };
const error = (type: string) => ({ type: "error", error: { type, message: `failed: ${type}` } });

/** Streams the client cuts, by prompt, once it has read their first part (so the gateway has committed them). */
type Cuts = Map<string, ReturnType<typeof controlledStream>>;

/** How the sick model fails, chosen by the prompt (`fault:<name> <client>`) so both SDKs can run at once. */
function faults(cuts: Cuts): Record<string, Responder> {
  return {
    "500": () => jsonReply(error("api_error"), 500, RETRY_SOON),
    "529": () => jsonReply(error("overloaded_error"), 529, RETRY_SOON),
    "429": () => jsonReply(error("rate_limit_error"), 429, RETRY_SOON),
    cut(seen) {
      const held = controlledStream();
      held.send(HEAD);
      cuts.set(promptOf(seen.body), held);
      return held.response;
    },
    "error-mid": () => sseReply(HEAD + `event: error\ndata: ${JSON.stringify(error("overloaded_error"))}\n\n`),
    async slow(seen) {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return seen.body?.stream ? sseReply(SSE) : jsonReply(anthropicMessage("slowly"));
    },
    hang: (seen) => hang(seen),
  };
}
const FAULT_NAMES = Object.keys(faults(new Map()));

function promptOf(body: Record<string, unknown> | undefined): string {
  return /fault:[a-z0-9-]+ [a-z]+/.exec(JSON.stringify(body?.messages))?.[0] ?? "";
}

function upstreamResponder(cuts: Cuts): Responder {
  const byName = faults(cuts);
  return (seen, req) => {
    if (seen.body?.model === "claude-well") {
      return seen.body.stream ? sseReply(SSE) : jsonReply(anthropicMessage("well"));
    }
    return byName[promptOf(seen.body).slice("fault:".length).split(" ")[0]](seen, req);
  };
}

/** Cuts the upstream stream behind `prompt`, once. */
function cut(cuts: Cuts, prompt: string): void {
  cuts.get(prompt)?.cut();
  cuts.delete(prompt);
}

/** The outcome of one SDK call: "ok", or the error's status ("none" for an error without one, as in-stream). */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "ok";
  } catch (err) {
    return String((err as { status?: number }).status ?? "none");
  }
}

Deno.test("the SDKs with default retries survive every fault of one model, and its neighbour serves 200 at once", async () => {
  await using upstream = fakeUpstream();
  const cuts: Cuts = new Map();
  upstream.routes.set("POST /shared/v1/messages", upstreamResponder(cuts));
  await using gw = await startGateway(upstream.url, {
    // The header timeout makes the hang fault a 504; a second leaves the healthy model's answers, 40 at a time, room on
    // a loaded machine, so a retry there would be the gateway's fault, not the test's.
    extraUpstreams: `
  - { name: shared, protocol: anthropic, base_url: ${upstream.url}/shared/v1, api_key_env: TEST_ANTHROPIC_KEY,
      timeout_ms: 1000, models: [claude-sick, claude-well] }`,
    extraGroups: "  - { name: team, listing: anthropic, models: [claude-sick, claude-well] }",
  });
  const token = (await gw.store.createToken({ group: "team" })).secret;
  const anthropic = new Anthropic({ apiKey: token, baseURL: gw.url, fetch: deadlineFetch() });
  const openai = new OpenAI({ apiKey: token, baseURL: `${gw.url}/v1`, fetch: deadlineFetch() });
  const ask = (model: string, text: string) => ({
    model,
    max_tokens: 16,
    messages: [{ role: "user" as const, content: text }],
  });

  const anthropicRun = async () => {
    const seen: Record<string, string> = {};
    for (const fault of FAULT_NAMES) {
      const prompt = `fault:${fault} anthropic`;
      const body = ask("claude-sick", prompt);
      seen[fault] = await outcome(() => {
        if (fault !== "cut" && fault !== "error-mid") return anthropic.messages.create(body);
        return anthropic.messages.stream(body).on("text", () => cut(cuts, prompt)).finalMessage();
      });
    }
    return seen;
  };
  const openaiRun = async () => {
    const seen: Record<string, string> = {};
    for (const fault of FAULT_NAMES) {
      const prompt = `fault:${fault} openai`;
      const body = ask("claude-sick", prompt);
      seen[fault] = await outcome(async () => {
        if (fault !== "cut" && fault !== "error-mid") return await openai.chat.completions.create(body);
        for await (const _ of await openai.chat.completions.create({ ...body, stream: true })) cut(cuts, prompt);
      });
    }
    return seen;
  };
  const [fromAnthropic, fromOpenai] = await within(
    Promise.all([anthropicRun(), openaiRun()]),
    20_000,
    "the fault cases",
  );
  const expected = {
    "500": "500",
    "529": "529",
    "429": "429",
    cut: "none",
    "error-mid": "none",
    slow: "ok",
    hang: "504",
  };
  assert.deepEqual(fromAnthropic, expected);
  assert.deepEqual(fromOpenai, { ...expected, "529": "503" }, "OpenAI clients get an overload as 503");

  const wellBefore = upstream.requests.filter((r) => r.body?.model === "claude-well").length;
  const healthy = async (i: number) => {
    const body = ask("claude-well", "Hi");
    if (i % 4 === 0) return (await anthropic.messages.create(body)).content[0].type;
    if (i % 4 === 1) return (await anthropic.messages.stream(body).finalMessage()).stop_reason;
    if (i % 4 === 2) return (await openai.chat.completions.create(body)).choices[0].finish_reason;
    let finish: string | null = null;
    for await (const chunk of await openai.chat.completions.create({ ...body, stream: true })) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    return finish;
  };
  // The SDKs, the gateway and the fake upstream share this process's event loop: 40 at a time keep the upstream's
  // answers within the 1 s header timeout even on a machine busy with other test files, where 200 at once did not.
  const results = await within(
    (async () => {
      const all: (string | null)[] = [];
      for (let wave = 0; wave < 5; wave++) {
        all.push(...await Promise.all(Array.from({ length: 40 }, (_, i) => healthy(wave * 40 + i))));
      }
      return all;
    })(),
    20_000,
    "200 requests to the healthy model",
  );
  assert.deepEqual(new Set(results), new Set(["text", "end_turn", "stop"]));
  assert.equal(
    upstream.requests.filter((r) => r.body?.model === "claude-well").length - wellBefore,
    200,
    "every request succeeded at its first try",
  );
  const health = await (await fetch(`${gw.url}/healthz`)).json();
  assert.equal(health.upstreams.shared.state, "ok");
  assert.equal(health.upstreams.shared.models["claude-well"].state, "ok");
  await within(Promise.all(upstream.requests.map((r) => r.closed)), 2000, "every upstream request closing");
});
