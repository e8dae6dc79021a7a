/**
 * @module MCP clients that sign in to the gateway with OAuth, for the tests: the official SDK's OAuthClientProvider kept
 * in memory, a loopback server for a client's redirect URI, and a walk of the gateway's sign-in pages over plain HTTP
 * (with one of the person's tokens, or through the test OpenID provider) with a cookie jar, as a browser would.
 */
import { deadlineFetch, readText } from "./_helpers.ts";
import type { OAuthClientProvider } from "./_mcp_sdk.ts";
import type { TestProvider } from "./_oidc_provider.ts";

type Metadata = OAuthClientProvider["clientMetadata"];
type Saved = Parameters<OAuthClientProvider["saveTokens"]>[0];
type Info = Parameters<NonNullable<OAuthClientProvider["saveClientInformation"]>>[0];

/** A provider that keeps what the SDK saves, and the authorization URL it was sent to. */
export interface MemoryProvider extends OAuthClientProvider {
  /** Where the SDK last sent the person. */
  authorizationUrl?: URL;
  saved: { client?: Info; tokens?: Saved; verifier?: string };
}

/** An SDK client provider for a public client with `redirectUrl`; `metadata` adds to what it registers. */
export function memoryProvider(
  redirectUrl: string,
  metadata: Partial<Metadata> = {},
  options: { clientMetadataUrl?: string } = {},
): MemoryProvider {
  const saved: MemoryProvider["saved"] = {};
  const provider: MemoryProvider = {
    saved,
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata(): Metadata {
      return {
        client_name: "Test agent",
        redirect_uris: [redirectUrl],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        ...metadata,
      };
    },
    ...options.clientMetadataUrl ? { clientMetadataUrl: options.clientMetadataUrl } : {},
    state: () => crypto.randomUUID(),
    clientInformation: () => saved.client,
    saveClientInformation: (info) => void (saved.client = info),
    tokens: () => saved.tokens,
    saveTokens: (tokens) => void (saved.tokens = tokens),
    redirectToAuthorization: (url) => void (provider.authorizationUrl = url),
    saveCodeVerifier: (verifier) => void (saved.verifier = verifier),
    codeVerifier: () => saved.verifier ?? "",
  };
  return provider;
}

/** A loopback server standing for a client's redirect URI: it answers a page and hands over each URL it was sent. */
export interface CallbackServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>/callback`. */
  url: string;
  /** The next URL the browser was sent to. */
  next(): Promise<URL>;
}

export function callbackServer(): CallbackServer {
  const arrived: URL[] = [];
  const waiting: ((url: URL) => void)[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    const waiter = waiting.shift();
    if (waiter) waiter(url);
    else arrived.push(url);
    return new Response("<!doctype html><title>Signed in</title><p>You may close this page.</p>", {
      headers: { "content-type": "text/html" },
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/callback`,
    next: () => arrived.length ? Promise.resolve(arrived.shift()!) : new Promise((resolve) => waiting.push(resolve)),
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** Cookies by name, as the gateway set them (paths are not told apart: the tests' pages are all the gateway's). */
export class CookieJar {
  readonly cookies = new Map<string, string>();
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const [name, value] = pair.trim().split(/=(.*)/s, 2);
      if (attributes.some((a) => /^\s*max-age=0/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
}

const fetchWithDeadline = deadlineFetch();

/** One step of a browser: a GET, or a POST of a form from the gateway's own page. */
export async function browse(
  jar: CookieJar,
  url: URL | string,
  form?: Record<string, string>,
): Promise<{ status: number; location?: URL; page: string; res: Response }> {
  const target = new URL(url);
  const res = await fetchWithDeadline(target, {
    method: form ? "POST" : "GET",
    redirect: "manual",
    headers: {
      cookie: jar.header(),
      ...form ? { "content-type": "application/x-www-form-urlencoded", origin: target.origin } : {},
    },
    body: form ? new URLSearchParams(form) : undefined,
  });
  jar.take(res);
  const location = res.headers.get("location");
  const page = await readText(res);
  return { status: res.status, location: location ? new URL(location, target) : undefined, page, res };
}

/** The value of a hidden input of a page. */
export function hidden(page: string, name: string): string {
  const value = new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1];
  if (value === undefined) throw new Error(`no ${name} field on the page: ${page.slice(0, 400)}`);
  return value;
}

/** How the walk signs in and decides. */
export interface WalkOptions {
  /** One of the person's tokens, for a gateway without an identity provider. */
  token?: string;
  /** The test provider and the login to sign in as, for a gateway with one. */
  provider?: TestProvider;
  login?: string;
  decision?: "allow" | "deny";
  jar?: CookieJar;
}

/** What the walk saw: the URL the gateway sent the browser back to the client with, and the consent page. */
export interface Walked {
  redirect: URL;
  consent?: string;
  jar: CookieJar;
}

/**
 * Follows an authorization URL through the gateway's pages as a person: signs in (a token, or the provider), then
 * allows (or denies) on the consent page; ends at the first redirect that leaves the gateway for the client.
 */
export async function walkSignIn(authorizationUrl: URL | string, options: WalkOptions): Promise<Walked> {
  const jar = options.jar ?? new CookieJar();
  const gateway = new URL(authorizationUrl).origin;
  const leaves = (url?: URL) => url !== undefined && url.origin !== gateway && url.origin !== options.provider?.issuer;
  let step = await browse(jar, authorizationUrl);
  if (leaves(step.location)) return { redirect: step.location!, jar };
  if (step.location && options.provider) {
    const done = await options.provider.complete(step.location.href, options.login ?? "");
    if (!done.redirect) throw new Error(`the provider did not send the browser back: ${done.page?.slice(0, 300)}`);
    step = await browse(jar, done.redirect);
  } else if (step.status === 200 && options.token !== undefined) {
    step = await browse(jar, `${gateway}/oauth/sign-in`, {
      request: hidden(step.page, "request"),
      token: options.token,
    });
  }
  if (!step.location) throw new Error(`no way on from the sign-in (${step.status}): ${step.page.slice(0, 3000)}`);
  const consent = await browse(jar, step.location);
  if (consent.status !== 200) throw new Error(`no consent page (${consent.status}): ${consent.page.slice(0, 400)}`);
  const decided = await browse(jar, `${gateway}/oauth/consent`, {
    request: hidden(consent.page, "request"),
    decision: options.decision ?? "allow",
  });
  if (!decided.location) throw new Error(`the consent sent nowhere (${decided.status}): ${decided.page.slice(0, 400)}`);
  return { redirect: decided.location, consent: consent.page, jar };
}
