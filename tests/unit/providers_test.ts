/** @module Unit tests for building upstream requests: which headers cross, and which never do. */
import assert from "node:assert/strict";
import { UpstreamSchema } from "../../src/core/upstream_config.ts";
import { createTransports, type Transport } from "../../src/providers/mod.ts";

/** An Anthropic upstream serving "m" and an OpenAI one serving "g", each with its key, as the config builds them. */
const UPSTREAMS = [
  { name: "m", protocol: "anthropic", base_url: "http://127.0.0.1:1/v1", api_key_env: "KA", models: ["m"] },
  { name: "g", protocol: "openai", base_url: "http://127.0.0.1:2/v1", api_key_env: "KO", models: ["g"] },
].map((upstream) => UpstreamSchema.parse(upstream));

/** The URL and headers the transport of `model` sends, caught by a fetch that answers nothing itself. */
async function build(model: string, client: Record<string, string>, search = "") {
  let sent: Request | undefined;
  const fetch = (url: string | URL | Request, init?: RequestInit) => {
    sent = new Request(url, init);
    return Promise.resolve(new Response("{}"));
  };
  const io = {
    env: (name: string) => ({ KA: "key-KA", KO: "key-KO" })[name],
    fetch: fetch as typeof globalThis.fetch,
    now: () => new Date(),
    log: () => {},
    readTextFile: () => "",
  };
  const transport: Transport | undefined = createTransports(UPSTREAMS, io).get(model)?.transport;
  assert.ok(transport, `a transport for ${model}`);
  await transport.send({
    operation: "generate",
    upstreamModel: model,
    body: { model },
    clientHeaders: new Headers(client),
    search,
    requestId: "req_1",
    signal: new AbortController().signal,
  });
  assert.ok(sent, "the transport sent a request");
  return { url: sent.url, headers: sent.headers };
}

const CLIENT = {
  "x-api-key": "sk-client",
  authorization: "Bearer sk-client",
  connection: "keep-alive, x-secret",
  "keep-alive": "timeout=5",
  te: "trailers",
  "transfer-encoding": "chunked",
  upgrade: "h2c",
  cookie: "a=b",
  host: "gateway.example",
};

const CASES: { name: string; model: string; client: Record<string, string>; want: Record<string, string | null> }[] = [
  {
    name: "an Anthropic upstream gets its key, the default version and the request id",
    model: "m",
    client: CLIENT,
    want: { "x-api-key": "key-KA", "anthropic-version": "2023-06-01", "x-request-id": "req_1" },
  },
  {
    name: "anthropic-version and anthropic-beta are forwarded unchanged",
    model: "m",
    client: { "anthropic-version": "2026-10-21", "anthropic-beta": "b-2,a-1, c" },
    want: { "anthropic-version": "2026-10-21", "anthropic-beta": "b-2,a-1, c" },
  },
  {
    name: "the vendorx spellings travel as sent and stand in for anthropic-version and anthropic-beta",
    model: "m",
    client: { "vendorx-version": "2024-01-01", "vendorx-beta": "x" },
    want: { "vendorx-version": "2024-01-01", "anthropic-version": "2024-01-01", "anthropic-beta": "x" },
  },
  {
    name: "an OpenAI upstream gets a Bearer key and no Anthropic headers",
    model: "g",
    client: { ...CLIENT, "anthropic-version": "2023-06-01" },
    want: { authorization: "Bearer key-KO", "anthropic-version": null, "x-api-key": null },
  },
];
for (const c of CASES) {
  Deno.test(`a keyed transport: ${c.name}`, async () => {
    const { headers } = await build(c.model, c.client);
    for (const [name, value] of Object.entries(c.want)) assert.equal(headers.get(name), value, name);
  });
}

Deno.test("a keyed transport never forwards the client's token, hop-by-hop headers, cookies or host", async () => {
  for (const model of ["m", "g"]) {
    const { headers } = await build(model, CLIENT);
    for (const [name, value] of headers) assert.ok(!value.includes("sk-client"), `token in ${name}`);
    for (
      const name of ["connection", "keep-alive", "te", "transfer-encoding", "upgrade", "cookie", "host", "x-secret"]
    ) {
      assert.equal(headers.get(name), null, name);
    }
  }
});

Deno.test("a keyed transport appends the operation path and the query to the base URL", async () => {
  assert.equal((await build("m", {}, "?beta=true")).url, "http://127.0.0.1:1/v1/messages?beta=true");
  assert.equal((await build("g", {})).url, "http://127.0.0.1:2/v1/chat/completions");
});
