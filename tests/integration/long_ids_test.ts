/**
 * @module Ids, names and filter values longer than a KV key holds, over real HTTP on every route that reads KV by
 * them: an unknown id is a 404, a filter a 400 naming the field, never a 500.
 */
import assert from "node:assert/strict";
import { open, post, signIn } from "../_console.ts";
import { fakeUpstream } from "../_fake_upstream.ts";
import { ADMIN_KEY, readText, startGateway, type TestGateway } from "../_helpers.ts";

/** Past KV's 2 KB key; the second is as long in bytes, written in two-byte characters. */
const LONGS = [
  { name: "3000 ASCII characters", id: "x".repeat(3000) },
  { name: "2040 ASCII characters", id: "y".repeat(2040) },
  { name: "1500 'é'", id: "é".repeat(1500) },
];

interface Case {
  name: string;
  /** Sends the request with the long id `id`; answers status and body text. */
  send(gw: TestGateway, id: string, cookie: string): Promise<{ status: number; text: string }>;
  status: number;
  /** The field a 400 names. */
  param?: string;
}

async function answer(res: Response): Promise<{ status: number; text: string }> {
  return { status: res.status, text: await readText(res) };
}

function v1(method: string, path: (id: string) => string, status = 404): Case {
  return {
    name: `${method} ${path(":id")}`,
    status,
    send: async (gw, id) =>
      answer(
        await fetch(`${gw.url}${path(encodeURIComponent(id))}`, { method, headers: { "x-api-key": gw.tokens.oa } }),
      ),
  };
}

function adminCase(method: string, path: (id: string) => string, status = 404, param?: string, body?: unknown): Case {
  return {
    name: `${method} ${path(":id")}`,
    status,
    param,
    send: async (gw, id) => answer(await gw.admin(method, path(encodeURIComponent(id)), body)),
  };
}

function consolePage(path: (id: string) => string, status: number, param?: string): Case {
  return {
    name: `console GET ${path(":id")}`,
    status,
    param,
    send: (gw, id, cookie) => open(gw, path(encodeURIComponent(id)), cookie),
  };
}

function consoleForm(path: (id: string) => string, fields: Record<string, string>): Case {
  return {
    name: `console POST ${path(":id")}`,
    status: 404,
    send: async (gw, id, cookie) => answer(await post(gw, path(encodeURIComponent(id)), fields, { cookie })),
  };
}

function responsesBody(name: string, body: (id: string) => unknown, param: string): Case {
  return {
    name: `POST /v1/responses with ${name}`,
    status: 400,
    param,
    send: async (gw, id) => answer(await gw.post("/v1/responses", body(id), { "x-api-key": gw.tokens.oa })),
  };
}

const CASES: Case[] = [
  v1("GET", (id) => `/v1/responses/${id}`),
  v1("DELETE", (id) => `/v1/responses/${id}`),
  v1("GET", (id) => `/v1/responses/${id}/input_items`),
  responsesBody(
    "a long previous_response_id",
    (id) => ({ model: "gpt-test", input: "Hi", previous_response_id: id }),
    "previous_response_id",
  ),
  responsesBody(
    "a long item_reference",
    (id) => ({ model: "gpt-test", input: [{ type: "item_reference", id }] }),
    "input[0]",
  ),
  adminCase("GET", (id) => `/admin/tokens/${id}`),
  adminCase("PATCH", (id) => `/admin/tokens/${id}`, 404, undefined, { name: "n" }),
  adminCase("DELETE", (id) => `/admin/tokens/${id}`),
  adminCase("DELETE", (id) => `/admin/tokens/${id}/responses`),
  adminCase("GET", (id) => `/admin/groups/${id}`),
  adminCase("PATCH", (id) => `/admin/groups/${id}`, 404, undefined, { listing: "auto" }),
  adminCase("DELETE", (id) => `/admin/groups/${id}`),
  adminCase("DELETE", (id) => `/admin/responses/${id}`),
  adminCase("GET", (id) => `/admin/requests?token=${id}`, 400, "token"),
  adminCase("GET", (id) => `/admin/requests?session=${id}`, 400, "session"),
  adminCase("GET", (id) => `/admin/requests?model=${id}`, 400, "model"),
  adminCase("GET", (id) => `/admin/usage?by=session&name=${id}`, 400, "name"),
  consolePage((id) => `/ui/tokens/${id}`, 404),
  consoleForm((id) => `/ui/tokens/${id}`, { name: "n" }),
  consoleForm((id) => `/ui/tokens/${id}/revoke`, {}),
  consolePage((id) => `/ui/groups/${id}`, 404),
  consoleForm((id) => `/ui/groups/${id}/delete`, {}),
  consolePage((id) => `/ui/requests?token=${id}`, 400, "token"),
  consolePage((id) => `/ui/requests?session=${id}`, 400, "session"),
  consolePage((id) => `/ui/usage?by=session&name=${id}`, 400, "name"),
];

for (const long of LONGS) {
  Deno.test(`ids of ${long.name} are a 404 or a 400 naming the field on every route, never a 500`, async () => {
    await using upstream = fakeUpstream();
    await using gw = await startGateway(upstream.url, { admin: true, env: { MODELGATE_ADMIN_KEY: ADMIN_KEY } });
    const cookie = await signIn(gw);
    const got: string[] = [];
    const want: string[] = [];
    for (const c of CASES) {
      const { status, text } = await c.send(gw, long.id, cookie);
      let param = c.param;
      if (c.param) {
        try {
          param = JSON.parse(text).error?.param;
        } catch {
          param = text.includes(`${c.param}: must be at most`) ? c.param : "(not named)";
        }
      }
      got.push(`${c.name}: ${status} ${param ?? ""}`);
      want.push(`${c.name}: ${c.status} ${c.param ?? ""}`);
    }
    assert.deepEqual(got, want);
    const crashes = gw.logs.filter((line) => line.event === "internal_error" || line.level === "error");
    assert.deepEqual(crashes.map((line) => line.event), []);
  });
}
