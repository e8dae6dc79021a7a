/** @module Unit tests for the route table, model resolution, pagination and endpoint matching. */
import assert from "node:assert/strict";
import { matchEndpoint } from "../../src/app.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { GatewayError } from "../../src/core/errors.ts";
import { undatedModels } from "../../src/access/model_dates.ts";
import { buildRouteTable, listModels, paginate, resolveRoutes } from "../../src/relay/routing.ts";
import { routeTableFor } from "../_helpers.ts";

const CONFIG = parseConfig(
  `
upstreams:
  - { name: a, protocol: anthropic, base_url: "http://127.0.0.1:1/v1", api_key_env: KEY_A, models: [m1, { id: alias, upstream_id: m1 }] }
  - { name: b, protocol: openai, base_url: "http://127.0.0.1:2/v1", api_key_env: KEY_B, priority: 2, weight: 3, models: [m1, m2] }
groups:
  - { name: g, listing: anthropic, models: [alias, m1] }
`,
  "unit.yaml",
);
const TABLE = routeTableFor(CONFIG, (name) => (name === "KEY_A" ? "ka" : undefined));
const GROUP = CONFIG.groups[0];

Deno.test("buildRouteTable() lists every upstream of a model with its key, priority and weight", () => {
  const routes = TABLE.routes.get("m1")!;
  assert.deepEqual(
    routes.map((r) => [r.upstream.name, r.protocol, r.upstreamModel, r.transport?.secrets(), r.priority, r.weight]),
    [["a", "anthropic", "m1", ["ka"], 0, 1], ["b", "openai-chat", "m1", undefined, 2, 3]],
  );
  assert.equal(TABLE.routes.get("alias")![0].upstreamModel, "m1");
});

Deno.test("resolveRoutes() answers the group's models and 404s the rest, naming the listing", () => {
  assert.equal(resolveRoutes(TABLE, GROUP, "alias").length, 1);
  for (const model of ["m2", "nope"]) {
    assert.throws(() => resolveRoutes(TABLE, GROUP, model), (err: GatewayError) => {
      assert.equal(err.kind, "not_found");
      assert.match(err.message, /GET \/v1\/models/);
      return true;
    });
  }
  assert.throws(() => resolveRoutes(TABLE, GROUP, "nope", "GET /v1beta/models"), /check GET \/v1beta\/models for/);
});

Deno.test("listModels() keeps the group's order and dates a model the config does not by when it was first served", () => {
  const table = buildRouteTable(CONFIG, () => undefined, {
    firstServed: new Map([["m1", "2026-03-01T10:00:00.000Z"]]),
    now: new Date("2026-05-01T00:00:00Z"),
  });
  const models = listModels(table, GROUP);
  assert.deepEqual(models.map((m) => m.id), ["alias", "m1"]);
  assert.equal(models[1].created_at, "2026-03-01T10:00:00.000Z");
  assert.equal(models[0].created_at, "2026-05-01T00:00:00.000Z", "one with no record yet: now, never 1970");
});

Deno.test("undatedModels() names the models whose listing entry has no created_at", () => {
  const config = parseConfig(
    `
upstreams:
  - name: a
    protocol: anthropic
    base_url: "http://127.0.0.1:1/v1"
    api_key_env: K
    models: [m1, { id: m2, created_at: "2025-01-01T00:00:00Z" }, { id: m3, display_name: "Three" }]
  - { name: b, protocol: openai, base_url: "http://127.0.0.1:2/v1", api_key_env: K, models: [m2, m4] }
groups: [{ name: g, listing: anthropic, models: [m1] }]
`,
    "unit.yaml",
  );
  assert.deepEqual(undatedModels(config), ["m1", "m3", "m4"]);
});

const ITEMS = ["a", "b", "c", "d", "e"].map((id) => ({ id }));
const PAGES = [
  { query: "", want: { ids: "abcde", has_more: false } },
  { query: "limit=2", want: { ids: "ab", has_more: true } },
  { query: "limit=2&after_id=b", want: { ids: "cd", has_more: true } },
  { query: "limit=2&after_id=d", want: { ids: "e", has_more: false } },
  { query: "limit=2&before_id=e", want: { ids: "cd", has_more: true } },
  { query: "limit=2&before_id=c", want: { ids: "ab", has_more: false } },
  { query: "after_id=e", want: { ids: "", has_more: false } },
];
for (const c of PAGES) {
  Deno.test(`paginate() pages "${c.query}"`, () => {
    const page = paginate(ITEMS, new URLSearchParams(c.query));
    assert.equal(page.data.map((i) => i.id).join(""), c.want.ids);
    assert.equal(page.has_more, c.want.has_more);
    assert.equal(page.first_id, page.data[0]?.id ?? null);
    assert.equal(page.last_id, page.data.at(-1)?.id ?? null);
  });
}

const BAD_PAGES = [
  { query: "limit=0", param: "limit" },
  { query: "limit=1001", param: "limit" },
  { query: "limit=1.5", param: "limit" },
  { query: "limit=abc", param: "limit" },
  { query: "after_id=zz", param: "after_id" },
  { query: "before_id=zz", param: "before_id" },
  { query: "after_id=a&before_id=b", param: "before_id" },
];
for (const c of BAD_PAGES) {
  Deno.test(`paginate() refuses "${c.query}" naming ${c.param}`, () => {
    assert.throws(() => paginate(ITEMS, new URLSearchParams(c.query)), (err: GatewayError) => {
      assert.equal(err.kind, "invalid_request");
      assert.equal(err.param, c.param);
      return true;
    });
  });
}

const PATHS = [
  { method: "POST", path: "/v1/messages", want: "/v1/messages" },
  { method: "POST", path: "/v1/v1/messages", want: "/v1/messages" },
  { method: "POST", path: "/v1/messages/", want: "/v1/messages" },
  { method: "POST", path: "/v1/messages/count_tokens", want: "/v1/messages/count_tokens" },
  { method: "GET", path: "/v1/models/claude%2Dx", want: "/v1/models/:id", id: "claude-x" },
  { method: "GET", path: "/v1/models/a/b", want: undefined },
  { method: "GET", path: "/v1/models/%E0%A4%A", want: undefined },
  { method: "GET", path: "/v1/messages", want: undefined, known: true },
  { method: "POST", path: "/v2/messages", want: undefined },
  { method: "GET", path: "/v1/responses/resp_1", want: "/v1/responses/:id", id: "resp_1" },
  { method: "GET", path: "/v1/responses/resp_1/input_items", want: "/v1/responses/:id/input_items", id: "resp_1" },
  { method: "GET", path: "/v1/responses//input_items", want: undefined },
  { method: "GET", path: "/v1/responses/a/b/input_items", want: undefined },
  { method: "POST", path: "/v1/responses/resp_1", want: undefined, known: true },
  { method: "DELETE", path: "/admin/tokens/tok_1/responses", want: "/admin/tokens/:id/responses", id: "tok_1" },
  { method: "GET", path: "/ui/", want: "/ui/*", rest: "" },
  { method: "PUT", path: "/ui/tokens/tok_1/revoke", want: "/ui/*", rest: "/tokens/tok_1/revoke" },
  { method: "GET", path: "/uix", want: undefined },
];
for (const c of PATHS) {
  Deno.test(`matchEndpoint() maps ${c.method} ${c.path}`, () => {
    const match = matchEndpoint(c.method, c.path);
    assert.equal(match.endpoint?.path, c.want);
    if (c.id) assert.equal(match.params.id, c.id);
    if (c.known) assert.equal(match.pathKnown, true);
    if (c.rest !== undefined) assert.equal(match.params.rest, c.rest);
  });
}
