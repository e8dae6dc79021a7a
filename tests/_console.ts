/** @module Talking to the console over HTTP as a browser does: its forms (with the console's Origin), sign-in, pages. */
import assert from "node:assert/strict";
import type { PersonRole } from "../src/access/roles.ts";
import { sessionCookie, startSession } from "../src/console/session.ts";
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

/** A person as a test signs them in: their email, role and the token groups they may mint in. */
export interface TestPerson {
  email: string;
  role: PersonRole;
  token_groups?: string[];
}

/**
 * Signs `person` in without the identity provider, as the OIDC callback would once it has checked them; answers the
 * session cookie (name=value) for requests over http.
 */
export async function signInAs(gw: TestGateway, person: TestPerson): Promise<string> {
  const { config } = gw.deps;
  const adminKey = gw.deps.operator.adminKey;
  assert.ok(adminKey, "the console needs the admin key: start the gateway with admin: true");
  const session = await startSession(gw.store.kv, adminKey, {
    maxMs: config.console.session_max_ms,
    idleMs: config.console.session_idle_ms,
    now: gw.deps.now(),
    person: { email: person.email, role: person.role, token_groups: person.token_groups ?? [] },
  });
  return sessionCookie({ ...session, now: gw.deps.now() }, false).split(";")[0];
}
