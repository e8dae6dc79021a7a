/**
 * @module A gateway in front of fake Responses API deployments (tests/_fake_responses_api.ts) for the tests of the
 * `openai-responses` upstream: `rsp-a` (first choice) and `rsp-b` serve `gpt-codex` from one account under two
 * keys; `rsp-x` serves `gpt-cross` second after `rsp-a2`, from another account whose reasoning the first cannot
 * read; `chat` serves the same family through Chat Completions, where `gpt-codex-chat` is Responses-only; and
 * `anth` serves a Messages model. What each deployment answered is kept, byte for byte.
 */
import { type FakeUpstream, fakeUpstream } from "./_fake_upstream.ts";
import { type Json, mountResponsesApi, type ResponsesApiState } from "./_fake_responses_api.ts";
import { scriptedModel, type Step } from "./_scripted_model.ts";
import { startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** The key each deployment takes; a request with another is its 401. */
export const KEYS = {
  TEST_OPENAI_KEY: "sk-upstream-openai-a",
  TEST_OPENAI_KEY_B: "sk-upstream-openai-b",
  TEST_OPENAI_KEY_X: "sk-upstream-openai-x",
  TEST_ANTHROPIC_KEY: "upstream-anthropic-key",
};

/** The default script: read a file, then answer. */
export const READ_FILE: Step[] = [{ tool: "read_file", args: { path: "notes.txt" } }, { text: "The notes say hi." }];

/** A deployment's check of its credential: the bearer `key`. */
export function bearer(key: string): (headers: Headers) => boolean {
  return (h) => h.get("authorization") === `Bearer ${key}`;
}

/**
 * The YAML line of an `openai-responses` upstream for the fake deployment `name` at `url`, taking the key in the
 * variable `keyEnv`; `fields` (each ending ", ") go before its `models`.
 */
export function responsesUpstream(url: string, name: string, keyEnv: string, models: string, fields = ""): string {
  return `  - { name: ${name}, protocol: openai-responses, base_url: "${url}/${name}/v1", api_key_env: ${keyEnv}, ` +
    `${fields}models: ${models} }`;
}

/** The gateway's config in front of the deployments at `url`. */
function responsesConfig(url: string, extra = ""): string {
  const rsp = (name: string, key: string, priority: number, models: string) =>
    responsesUpstream(url, name, key, models, `priority: ${priority}, timeout_ms: 5000, `);
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
routing: { deadline_ms: 5000, affinity: { enabled: false } }
${extra}
upstreams:
${rsp("rsp-a", "TEST_OPENAI_KEY", 1, "[gpt-codex, { id: codex, upstream_id: gpt-codex }]")}
${rsp("rsp-b", "TEST_OPENAI_KEY_B", 0, "[gpt-codex]")}
${rsp("rsp-a2", "TEST_OPENAI_KEY", 1, "[gpt-cross]")}
${rsp("rsp-x", "TEST_OPENAI_KEY_X", 0, "[gpt-cross]")}
  - { name: chat, protocol: openai, base_url: "${url}/chat/v1", api_key_env: TEST_OPENAI_KEY, timeout_ms: 5000,
      models: [gpt-codex-chat, gpt-plain] }
  - { name: anth, protocol: anthropic, base_url: "${url}/anth/v1", api_key_env: TEST_ANTHROPIC_KEY, models: [claude-test] }
groups:
  - { name: oa, listing: openai, models: [gpt-codex, codex, gpt-cross, gpt-codex-chat, gpt-plain, claude-test] }
usage: { flush_ms: 60000, auth_refresh_ms: 100 }
`;
}

/** The deployments, the gateway and what each deployment saw and sent. */
export interface ResponsesRig extends AsyncDisposable {
  upstream: FakeUpstream;
  gw: TestGateway;
  token: string;
  /** Each Responses deployment's state, by name (rsp-a, rsp-b, rsp-a2, rsp-x). */
  api: Record<string, ResponsesApiState>;
  /** The bodies each route answered with, in order, by "METHOD /path". */
  sent: Map<string, string[]>;
  /** POSTs JSON to the gateway with the token. */
  post(path: string, body: Json, headers?: Record<string, string>): Promise<Response>;
  /** Makes a deployment answer 503 (`down`) or as usual. */
  setDown(name: string, down: boolean): void;
}

/** Starts the deployments and a gateway in front of them. */
export async function responsesRig(
  options: { script?: Step[]; configExtra?: string; gateway?: StartOptions } = {},
): Promise<ResponsesRig> {
  const upstream = fakeUpstream();
  const script = options.script ?? READ_FILE;
  // Each deployment: the account whose secret seals its items, and the key it takes.
  const deployments = {
    "rsp-a": ["acct-1", KEYS.TEST_OPENAI_KEY],
    "rsp-b": ["acct-1", KEYS.TEST_OPENAI_KEY_B],
    "rsp-a2": ["acct-1", KEYS.TEST_OPENAI_KEY],
    "rsp-x": ["acct-2", KEYS.TEST_OPENAI_KEY_X],
  };
  const api = Object.fromEntries(
    Object.entries(deployments).map(([name, [secret, key]]) => [
      name,
      mountResponsesApi(upstream, `/${name}/v1`, { secret, authorized: bearer(key), script }),
    ]),
  );
  mountResponsesApi(upstream, "/chat/v1", {
    secret: "acct-1",
    authorized: bearer(KEYS.TEST_OPENAI_KEY),
    responsesOnly: ["gpt-codex-chat"],
    script,
  });
  upstream.routes.set("POST /anth/v1/messages", scriptedModel(script).anthropic);
  // Every answer is kept as sent; a deployment set down answers 503 instead.
  const sent = new Map<string, string[]>();
  const down = new Set<string>();
  for (const [key, responder] of [...upstream.routes]) {
    upstream.routes.set(key, async (seen, req) => {
      if (down.has(key.split("/")[1])) {
        return Response.json({ error: { message: "overloaded", type: "server_error", code: null } }, { status: 503 });
      }
      const res = await responder(seen, req);
      const text = await res.clone().text();
      sent.set(key, [...sent.get(key) ?? [], text]);
      return res;
    });
  }
  const gw = await startGateway(upstream.url, {
    configYaml: responsesConfig(upstream.url, options.configExtra),
    env: KEYS,
    ...options.gateway,
  });
  const token = gw.tokens.oa;
  return {
    upstream,
    gw,
    token,
    api,
    sent,
    post: (path, body, headers = {}) => gw.post(path, body, { "x-api-key": token, ...headers }),
    setDown: (name, isDown) => isDown ? down.add(name) : down.delete(name),
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}
