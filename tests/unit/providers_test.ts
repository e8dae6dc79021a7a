/** @module Unit tests for building upstream requests: which headers cross, and which never do. */
import assert from "node:assert/strict";
import { buildUpstreamRequest, type Target } from "../../src/providers/keyed.ts";

/** An Anthropic upstream serving "m" and an OpenAI one serving "g", each with its key. */
const TARGETS: Record<string, Target> = {
  m: { upstream: { base_url: "http://127.0.0.1:1/v1" }, protocol: "anthropic", apiKey: "key-KA" },
  g: { upstream: { base_url: "http://127.0.0.1:2/v1" }, protocol: "openai-chat", apiKey: "key-KO" },
};

function build(model: string, client: Record<string, string>, search = "") {
  const { url, init } = buildUpstreamRequest({
    route: TARGETS[model],
    operation: "generate",
    body: { model },
    clientHeaders: new Headers(client),
    search,
    requestId: "req_1",
  });
  return { url, headers: new Headers(init.headers) };
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
    name: "the seed's vendorx headers travel as sent and stand in for the real ones",
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
  Deno.test(`buildUpstreamRequest(): ${c.name}`, () => {
    const { headers } = build(c.model, c.client);
    for (const [name, value] of Object.entries(c.want)) assert.equal(headers.get(name), value, name);
  });
}

Deno.test("buildUpstreamRequest() never forwards the client's token, hop-by-hop headers, cookies or host", () => {
  for (const model of ["m", "g"]) {
    const { headers } = build(model, CLIENT);
    for (const [name, value] of headers) assert.ok(!value.includes("sk-client"), `token in ${name}`);
    for (
      const name of ["connection", "keep-alive", "te", "transfer-encoding", "upgrade", "cookie", "host", "x-secret"]
    ) {
      assert.equal(headers.get(name), null, name);
    }
  }
});

Deno.test("buildUpstreamRequest() appends the operation path and the query to the base URL", () => {
  assert.equal(build("m", {}, "?beta=true").url, "http://127.0.0.1:1/v1/messages?beta=true");
  assert.equal(build("g", {}).url, "http://127.0.0.1:2/v1/chat/completions");
});
