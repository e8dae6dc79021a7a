/** @module Talking to the console over HTTP as a browser does: its forms (with the console's Origin), sign-in, pages. */
import assert from "node:assert/strict";
import { ADMIN_KEY, type TestGateway } from "./_helpers.ts";
import { deadlineFetch, readText } from "./_reads.ts";

/** Every request here ends within the tests' deadline, its page included. */
const fetchWithDeadline = deadlineFetch();

/** Every page of the console a signed-in operator can open without an id. */
export const PAGES = [
  "/ui/",
  "/ui/tokens",
  "/ui/groups",
  "/ui/groups/default",
  "/ui/usage",
  "/ui/requests",
  "/ui/upstreams",
  "/ui/operators",
  "/ui/audit",
];

/** Sends a console form as a browser on the console's own page would (with its Origin). */
export function post(
  gw: TestGateway,
  path: string,
  fields: Record<string, string | string[]>,
  headers: Record<string, string> = {},
): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const one of [value].flat()) body.append(name, one);
  }
  return fetchWithDeadline(`${gw.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: gw.url, ...headers },
    body,
  });
}

/** Signs in and answers the session cookie (name=value). */
export async function signIn(gw: TestGateway): Promise<string> {
  const res = await post(gw, "/ui/login", { key: ADMIN_KEY });
  assert.equal(res.status, 303);
  await res.body?.cancel();
  return res.headers.get("set-cookie")!.split(";")[0];
}

/** A console page's status and text. */
export async function open(gw: TestGateway, path: string, cookie?: string): Promise<{ status: number; text: string }> {
  const res = await fetchWithDeadline(`${gw.url}${path}`, { redirect: "manual", headers: cookie ? { cookie } : {} });
  return { status: res.status, text: await readText(res) };
}
