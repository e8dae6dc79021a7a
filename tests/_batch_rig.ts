/**
 * @module A gateway in front of the fake Files and batch APIs (tests/_fake_batch_api.ts) on one clock the test moves:
 * `anth` (Anthropic: `claude-batch` as `claude-up-1`, `claude-2` as `claude-up-2`, priced), `anth-b` (another
 * Anthropic account, tried first for `claude-batch`), `oai` (OpenAI with its batch API: `gpt-batch` as `gpt-up-1`,
 * priced), `oai-resp` (the same OpenAI account through Responses: `gpt-resp`) and `compat` (an OpenAI-compatible
 * service with no batch API: `llama`), two tokens of one group, and the official SDKs on each.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { type FakeBatchApi, fakeBatchApi } from "./_fake_batch_api.ts";
import { deadlineFetch, startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** The upstream keys: the gateway's account at each provider. */
export const BATCH_KEYS = {
  ANTH_BATCH_KEY: "anth-team-key",
  ANTH_OTHER_KEY: "anth-other-key",
  OAI_BATCH_KEY: "oai-team-key",
};

/** The rig. */
export interface BatchRig extends AsyncDisposable {
  api: FakeBatchApi;
  gw: TestGateway;
  clock: { now: number };
  /** The first and a second token of the same group. */
  token: string;
  other: string;
  anthropic(token?: string): Anthropic;
  openai(token?: string): OpenAI;
}

/** What a rig may change: more YAML for the config (a `batches:` section, limits on the group). */
export interface BatchRigOptions {
  extraYaml?: string;
  groupLimits?: string;
  gateway?: StartOptions;
}

/** Starts the fake APIs and a gateway in front of them. */
export async function batchRig(options: BatchRigOptions = {}): Promise<BatchRig> {
  const clock = { now: Date.UTC(2026, 0, 1) };
  const api = fakeBatchApi(
    {
      [BATCH_KEYS.ANTH_BATCH_KEY]: "team",
      [BATCH_KEYS.OAI_BATCH_KEY]: "team",
      [BATCH_KEYS.ANTH_OTHER_KEY]: "other",
    },
    ["claude-up-1", "claude-up-2", "gpt-up-1"],
    () => clock.now,
  );
  const limits = options.groupLimits ? `, limits: ${options.groupLimits}` : "";
  const gw = await startGateway(api.url, {
    configYaml: `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
routing: { affinity: { enabled: false }, retry_budget: { ratio: 0, min_retries: 0 } }
${options.extraYaml ?? ""}
upstreams:
  - { name: anth, protocol: anthropic, base_url: "${api.url}/anthropic/v1", api_key_env: ANTH_BATCH_KEY,
      models: [{ id: claude-batch, upstream_id: claude-up-1, price: { input: 3, output: 15 } },
               { id: claude-2, upstream_id: claude-up-2 }] }
  - { name: anth-b, protocol: anthropic, base_url: "${api.url}/anthropic/v1", api_key_env: ANTH_OTHER_KEY, priority: 1,
      models: [{ id: claude-batch, upstream_id: claude-up-1 }] }
  - { name: oai, protocol: openai, batch_api: true, base_url: "${api.url}/openai/v1", api_key_env: OAI_BATCH_KEY,
      models: [{ id: gpt-batch, upstream_id: gpt-up-1, price: { input: 2, output: 8, batch_input: 0.5 } }] }
  - { name: oai-resp, protocol: openai-responses, base_url: "${api.url}/openai/v1", api_key_env: OAI_BATCH_KEY,
      models: [{ id: gpt-resp, upstream_id: gpt-up-1 }] }
  - { name: compat, protocol: openai, base_url: "${api.url}/compat/v1", api_key_env: OAI_BATCH_KEY, models: [llama] }
groups:
  - { name: default, listing: auto, models: [claude-batch, claude-2, gpt-batch, gpt-resp, llama]${limits} }
usage: { flush_ms: 60000, auth_refresh_ms: 100 }
`,
    env: BATCH_KEYS,
    now: () => new Date(clock.now),
    ...options.gateway,
  });
  const token = gw.tokens.default;
  const other = (await gw.store.createToken({ group: "default" })).secret;
  return {
    api,
    gw,
    clock,
    token,
    other,
    anthropic: (apiKey = token) => new Anthropic({ apiKey, baseURL: gw.url, maxRetries: 0, fetch: deadlineFetch() }),
    openai: (apiKey = token) => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0, fetch: deadlineFetch() }),
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await api[Symbol.asyncDispose]();
    },
  };
}

/** Input lines for /v1/chat/completions naming `model`, one per custom id. */
export function chatLines(ids: string[], model = "gpt-batch", url = "/v1/chat/completions"): string {
  return ids.map((id) =>
    JSON.stringify({ custom_id: id, method: "POST", url, body: { model, messages: [{ role: "user", content: id }] } })
  ).join("\n") + "\n";
}
