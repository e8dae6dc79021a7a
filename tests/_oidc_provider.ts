/**
 * @module A real OpenID provider (npm oidc-provider) on 127.0.0.1 port 0 for tests: accounts whose claims are email,
 * name and groups, one confidential client with the authorization-code flow (PKCE required) and the device flow, and
 * ways to complete its login as an account over HTTP (a cookie jar filling its forms) or in a Chromium page; and a test
 * gateway configured to sign in through it.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import type { Page } from "puppeteer-core";
import { startGateway, type TestGateway } from "./_helpers.ts";
import { deadlineFetch, readText, within } from "./_reads.ts";

/** An account's claims, as the provider puts them in the id_token. */
export interface TestAccount {
  email: string;
  name?: string;
  groups?: string[];
  /** Sent as `email_verified`, whatever it is (a string, a number...); true unless given, left out when undefined. */
  email_verified?: unknown;
}

/** The provider under test. */
export interface TestProvider extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, as the provider names itself in `iss`. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Accounts by their login; a test may add one while the provider runs. */
  accounts: Map<string, TestAccount>;
  /**
   * Follows `url` (an authorization request, or a device flow's verification_uri_complete) through the provider's
   * pages with a cookie jar, filling its forms as `login`; answers where the provider sent the browser back (the
   * redirect URI with code and state), or the text of the last page when it sends it nowhere (the device flow's end).
   */
  complete(url: string, login: string): Promise<{ redirect?: URL; page?: string }>;
  /** Fills the provider's login form in `page` as `login` and submits it, and its consent form when it asks. */
  signInPage(page: Page, login: string): Promise<void>;
  /**
   * An id_token signed with the provider's own key, holding `claims` over ones it would issue to its client now
   * (iss, aud, sub, email, iat, exp): what a provider that erred, or a token made for another client, would carry.
   */
  signIdToken(claims: JWTPayload): Promise<string>;
}

/** What the provider hands `loadExistingGrant` (the package ships no types). */
interface GrantContext {
  oidc: {
    provider: { Grant: new (init: { clientId: string; accountId: string }) => Grant };
    client: { clientId: string };
    session: { accountId: string };
    params?: { scope?: unknown };
  };
}
interface Grant {
  addOIDCScope(scope: string): void;
  save(): Promise<unknown>;
}

/** The client the gateway under test is registered as. */
const CLIENT_ID = "modelgate-test";
const CLIENT_SECRET = "oidc-client-secret-0123456789abcdefghij";
/** The claims each scope releases; `groups` is not a standard scope, as with most providers it must be asked for. */
const CLAIMS = { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] };

const fetchWithDeadline = deadlineFetch();

/** A page without the provider's default look, which loads a font from the internet. */
function plainPage(title: string, body: string): string {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
}

/**
 * oidc-provider warns about what makes it unfit for production (this runtime, its in-memory adapter, its development
 * login pages, lifetimes left to their defaults): all true of a provider made for tests, and lines that read like
 * failures in the test output. From the first provider on, this test process drops its warning and notice lines;
 * every other line passes. It is loaded only after, since it warns about the runtime as it loads.
 */
async function quietProvider(): Promise<typeof import("oidc-provider").default> {
  const quieted = Symbol.for("modelgate.tests.oidcProviderQuiet");
  const marked = console as Console & { [quieted]?: true };
  if (!marked[quieted]) {
    marked[quieted] = true;
    for (const level of ["warn", "info"] as const) {
      const write = console[level].bind(console);
      console[level] = (...args: unknown[]) => {
        if (typeof args[0] === "string" && /oidc-provider (WARNING|NOTICE): /.test(args[0])) return;
        write(...args);
      };
    }
  }
  return (await import("oidc-provider")).default;
}

/** Starts the provider with `accounts` (by login). */
export async function startOidcProvider(accounts: Record<string, TestAccount>): Promise<TestProvider> {
  const Provider = await quietProvider();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const known = new Map(Object.entries(accounts));
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...await exportJWK(privateKey), kid: "test-key-1", alg: "RS256", use: "sig" };
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      // A native client may use any port of a loopback redirect URI (RFC 8252), as gateways under test have.
      application_type: "native",
      redirect_uris: ["http://127.0.0.1/ui/auth/callback"],
      grant_types: ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    }],
    jwks: { keys: [jwk] },
    cookies: { keys: ["test-cookie-key-0123456789"] },
    claims: CLAIMS,
    scopes: ["openid", "email", "profile", "groups"],
    // The id_token carries the claims its scopes release, so the gateway needs no userinfo call.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      deviceFlow: {
        enabled: true,
        userCodeInputSource: (ctx: { body: string }, form: string) => {
          ctx.body = plainPage("Enter code", `${form}<button type="submit" form="op.deviceInputForm">Go</button>`);
        },
        userCodeConfirmSource: (ctx: { body: string }, form: string) => {
          ctx.body = plainPage("Confirm", `${form}<button type="submit" form="op.deviceConfirmForm">Go</button>`);
        },
        successSource: (ctx: { body: string }) => {
          ctx.body = plainPage("Signed in", "<p>Device signed in.</p>");
        },
      },
    },
    findAccount(_ctx: unknown, id: string) {
      const account = known.get(id);
      if (!account) return undefined;
      // An account whose email_verified is undefined sends none: the claim is left out, not sent as null.
      const claims = { sub: id, email_verified: true, groups: [], ...account };
      if ("email_verified" in account && account.email_verified === undefined) delete claims.email_verified;
      return { accountId: id, claims: () => claims };
    },
    // The gateway is a first-party client: the grant covers what it asked for, so only the provider's confirmation of
    // a native client remains.
    async loadExistingGrant(ctx: GrantContext) {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope(String(ctx.oidc.params?.scope ?? "openid"));
      await grant.save();
      return grant;
    },
  });
  server.on("request", provider.callback());
  return {
    issuer,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    accounts: known,
    complete: (url, login) => completeAs(issuer, url, login),
    signIdToken(claims) {
      const now = Math.floor(Date.now() / 1000);
      const base = {
        iss: issuer,
        aud: CLIENT_ID,
        sub: "someone",
        email: "someone@example.com",
        iat: now,
        exp: now + 600,
      };
      return new SignJWT({ ...base, ...claims }).setProtectedHeader({ alg: "RS256", kid: jwk.kid }).sign(privateKey);
    },
    async signInPage(page, login) {
      await page.waitForSelector("input[name=login]");
      await page.type("input[name=login]", login);
      await page.type("input[name=password]", "any");
      await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      // A native client is asked to confirm every time (the provider's policy), so its consent page may follow.
      if (await page.$("input[name=prompt][value=consent]")) {
        await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      }
    },
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await within(new Promise<void>((resolve) => server.close(() => resolve())), 5000, "closing the OIDC provider");
    },
  };
}

/** The first form of a page: where it posts, and its inputs' names and values. */
function formOf(page: string): { action: string; fields: [string, string][] } | undefined {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(page);
  if (!form) return undefined;
  const attr = (tag: string, name: string) =>
    new RegExp(`\\b${name}="([^"]*)"`, "i").exec(tag)?.[1].replaceAll("&amp;", "&");
  const fields: [string, string][] = [];
  for (const input of form[2].matchAll(/<input\b[^>]*>/gi)) {
    const name = attr(input[0], "name");
    if (name) fields.push([name, attr(input[0], "value") ?? ""]);
  }
  return { action: attr(form[1], "action") ?? "", fields };
}

async function completeAs(issuer: string, start: string, login: string): Promise<{ redirect?: URL; page?: string }> {
  const jar = new Map<string, string>();
  let url = new URL(start);
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 20; step++) {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
    const res = await fetchWithDeadline(url, {
      method: body ? "POST" : "GET",
      redirect: "manual",
      headers: { cookie, ...body ? { "content-type": "application/x-www-form-urlencoded" } : {} },
      body,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const [name, value] = pair.trim().split(/=(.*)/s, 2);
      const gone = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (gone) jar.delete(name);
      else jar.set(name, value);
    }
    body = undefined;
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      url = new URL(location, url);
      if (url.origin !== issuer) return { redirect: url };
      continue;
    }
    const page = await readText(res);
    const form = formOf(page);
    if (!form) return { page };
    const fields = new URLSearchParams(form.fields);
    if (fields.has("login")) fields.set("login", login);
    if (fields.has("password")) fields.set("password", "any");
    url = new URL(form.action, url);
    body = fields;
  }
  throw new Error(`The provider's pages did not end after 20 steps (at ${url})`);
}

/** A fetch for a gateway that notes in `calls` each call it makes to `provider`'s token endpoint. */
export function countingTokenCalls(provider: TestProvider, calls: string[]): typeof fetch {
  return (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith(provider.issuer) && new URL(url).pathname.endsWith("/token")) calls.push(url);
    return fetch(input, init);
  };
}

/** What a gateway signing in through a test provider is started with, beyond the provider itself. */
export interface OidcGatewayOptions {
  /** The rules, as YAML flow mappings, e.g. `{ group: platform-admins, role: admin }`. */
  roles: string[];
  /** More `auth.oidc` keys, as YAML lines indented for it, e.g. `redirect_url: https://...`. */
  oidc?: string[];
  /** The scopes asked for; openid, email, profile and groups unless given. */
  scopes?: string[];
  /** Top-level YAML before the auth section, e.g. `public_hosts: [...]`. */
  top?: string;
  /** A KV shared with another gateway. */
  kv?: Deno.Kv;
  /** The gateway's clock. */
  now?(): Date;
  /** The gateway's fetch, e.g. one that alters what the provider answers. */
  fetch?: typeof fetch;
}

/** Starts a gateway (admin key on) whose console signs in through `provider`, with the client secret in its env. */
export function startOidcGateway(
  provider: TestProvider,
  upstreamUrl: string,
  options: OidcGatewayOptions,
): Promise<TestGateway> {
  const yaml = [
    "auth:",
    "  oidc:",
    `    issuer: "${provider.issuer}"`,
    `    client_id: ${provider.clientId}`,
    "    client_secret_env: OIDC_CLIENT_SECRET",
    `    scopes: [${(options.scopes ?? ["openid", "email", "profile", "groups"]).join(", ")}]`,
    ...(options.oidc ?? []).map((line) => `    ${line}`),
    "    roles:",
    ...options.roles.map((rule) => `      - ${rule}`),
  ].join("\n");
  return startGateway(upstreamUrl, {
    admin: true,
    kv: options.kv,
    now: options.now,
    fetch: options.fetch,
    extraYaml: `${options.top ?? ""}${yaml}\n`,
    env: { OIDC_CLIENT_SECRET: provider.clientSecret },
  });
}
