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
  "/ui/mcp",
  "/ui/batches",
  "/ui/operators",
  "/ui/people",
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

/** What a sign-in through the identity provider ended with: the callback's answer and, when signed in, the cookie. */
export interface OidcSignIn {
  status: number;
  location: string | null;
  text: string;
  /** The session cookie (name=value), when the callback started a session. */
  cookie?: string;
  /** The callback URL the provider sent the browser to, to replay or tamper with. */
  callback: URL;
  /** The flow cookie the start set (name=value). */
  flow: string;
}

/**
 * Signs in through the identity provider over HTTP as a browser would: the console's start, the provider's pages as
 * `login`, and the console's callback with the flow cookie; `tamper` may change the callback URL first.
 */
export async function oidcSignIn(
  gw: TestGateway,
  provider: { complete(url: string, login: string): Promise<{ redirect?: URL }> },
  login: string,
  options: { next?: string; tamper?(callback: URL): void } = {},
): Promise<OidcSignIn> {
  const start = await fetchWithDeadline(`${gw.url}/ui/auth/oidc?next=${encodeURIComponent(options.next ?? "/ui/")}`, {
    redirect: "manual",
  });
  await start.body?.cancel();
  assert.equal(start.status, 303);
  const flow = start.headers.get("set-cookie")!.split(";")[0];
  const { redirect } = await provider.complete(start.headers.get("location")!, login);
  assert.ok(redirect, "the provider sends the browser back to the console");
  options.tamper?.(redirect);
  return { ...await callback(redirect, flow), callback: redirect, flow };
}

/** Opens the console's callback `url` with the cookie `flow`. */
export async function callback(url: URL, flow: string): Promise<Omit<OidcSignIn, "callback" | "flow">> {
  const res = await fetchWithDeadline(url, { redirect: "manual", headers: { cookie: flow } });
  const session = res.headers.getSetCookie().find((line) => line.startsWith("modelgate_console="));
  return {
    status: res.status,
    location: res.headers.get("location"),
    text: await readText(res),
    cookie: session?.split(";")[0],
  };
}
