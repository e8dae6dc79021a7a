/**
 * @module Claims of the docs checked against the running gateway: a Responses body passes through as the client sent
 * it, the admin API table names every field the group endpoints take, a refused Entra ID grant names the codes Entra
 * sent, and `/healthz` says whether an upstream's credentials are configured.
 */
import assert from "node:assert/strict";
import { GroupCreate, GroupUpdate } from "../../src/admin/schemas.ts";
import { ENTRA } from "../_fake_azure.ts";
import { azureRig } from "../_azure_upstream.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { readText, startGateway } from "../_helpers.ts";
import { ROOT } from "../_process.ts";

const RESPONSES_YAML = (url: string) => `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
upstreams:
  - { name: rsp, protocol: openai-responses, base_url: "${url}/v1", api_key_env: KEY, models: [gpt-x] }
  - { name: nokey, protocol: anthropic, base_url: "${url}/v1", api_key_env: UNSET_KEY, models: [claude-x] }
groups:
  - { name: default, listing: openai, models: [gpt-x, claude-x] }
`;

const ANSWER = {
  id: "resp_up",
  object: "response",
  status: "completed",
  model: "gpt-x",
  output: [{
    type: "message",
    id: "msg_up",
    role: "assistant",
    content: [{ type: "output_text", text: "Hi" }],
  }],
  usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
};

Deno.test("docs (protocols.md): a Responses body reaches the provider as the client sent it, stored or not", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /v1/responses", () => jsonReply(ANSWER));
  await using gw = await startGateway(upstream.url, {
    configYaml: RESPONSES_YAML(upstream.url),
    env: { KEY: "k" },
  });
  for (const store of [undefined, true, false]) {
    const sent = JSON.stringify({
      model: "gpt-x",
      input: "Hello",
      ...(store === undefined ? {} : { store }),
    });
    const res = await gw.post("/v1/responses", sent, {
      authorization: `Bearer ${gw.tokens.default}`,
    });
    assert.equal(res.status, 200, await readText(res));
    assert.equal(upstream.requests.at(-1)?.raw, sent, `store: ${store}`);
  }
});

/** The fields a row of the admin API table names for `route`, from its body column. */
async function documentedFields(route: string): Promise<string[]> {
  const doc = await Deno.readTextFile(`${ROOT}docs/running-for-a-team.md`);
  const row = doc.split("\n").find((line) => line.startsWith(`| \`${route}\``));
  assert.ok(row, `the admin API table has a row for ${route}`);
  const body = /`\{([^}]*)\}`/.exec(row.split("|")[2])?.[1] ?? "";
  return body.split(",").map((field) => field.trim().replace(/\?$/, "")).sort();
}

Deno.test("docs (running-for-a-team.md): the admin API table names every field the group endpoints take", async () => {
  assert.deepEqual(
    await documentedFields("POST /admin/groups"),
    Object.keys(GroupCreate.shape).sort(),
  );
  assert.deepEqual(
    await documentedFields("PATCH /admin/groups/{name}"),
    Object.keys(GroupUpdate.shape).sort(),
  );
});

Deno.test("docs (clouds.md): a refused Entra ID grant names OAuth's code, and the AADSTS number only when Entra sends one", async () => {
  const body = { model: "codex-entra", input: "Hi", store: false };
  // A refused grant stands for a while (the negative cache), so each answer comes from a gateway of its own.
  const refusal = async (extra: Record<string, unknown>) => {
    await using rig = await azureRig();
    rig.upstream.routes.set(`POST /${ENTRA.tenant}/oauth2/v2.0/token`, () =>
      Response.json({
        error: "invalid_client",
        error_description: "secret",
        ...extra,
      }, { status: 401 }));
    return await readText(await rig.post("/v1/responses", body));
  };
  const withNumber = await refusal({ error_codes: [7000215] });
  assert.match(
    withNumber,
    /The token endpoint answered 401 \(invalid_client, AADSTS7000215\)/,
  );
  const withoutNumber = await refusal({});
  assert.match(
    withoutNumber,
    /The token endpoint answered 401 \(invalid_client\)/,
  );
  assert.doesNotMatch(
    withoutNumber + withNumber,
    /AADSTS\d*[^\d]*AADSTS|secret"/,
  );
});

Deno.test("docs (operating.md): /healthz has_key says whether an upstream's credentials are configured, not if accepted", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set(
    "POST /v1/responses",
    () => jsonReply({ error: { message: "bad key" } }, 401),
  );
  await using gw = await startGateway(upstream.url, {
    configYaml: RESPONSES_YAML(upstream.url),
    env: { KEY: "k" },
  });
  const before = JSON.parse(await readText(await fetch(`${gw.url}/healthz`)));
  assert.deepEqual([
    before.upstreams.rsp.has_key,
    before.upstreams.nokey.has_key,
  ], [true, false]);
  const sent = await gw.post("/v1/responses", {
    model: "gpt-x",
    input: "Hi",
    store: false,
  }, {
    authorization: `Bearer ${gw.tokens.default}`,
  });
  assert.equal(
    sent.status,
    502,
    "a key the provider refuses is the gateway's problem, not the client's",
  );
  await sent.body?.cancel();
  const after = JSON.parse(await readText(await fetch(`${gw.url}/healthz`)));
  assert.equal(
    after.upstreams.rsp.has_key,
    true,
    "a refused key is still a configured one",
  );
  assert.equal(
    after.upstreams.rsp.recent_failures,
    1,
    "the refusal counts against the upstream itself",
  );
});
