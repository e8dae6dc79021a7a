/**
 * @module What one console sign-in remembers between its start and its callback: a short-lived cookie (state, nonce,
 * PKCE verifier, where to go next, its deadline) signed with a key derived from the admin key, and a KV record the
 * callback consumes, so a flow is finished at most once, whichever instance the browser comes back to.
 * Keys: ["oidc_flow", sha256(state)] -> true.
 */
import { sameSecret } from "../access/auth.ts";
import { hashToken, type Store } from "../access/store.ts";

/** The flow cookie over http (for /ui/auth only) and over https (`__Host-`: Secure, whole host, this host's alone). */
const FLOW_COOKIE = "modelgate_oidc";
const HOST_FLOW_COOKIE = "__Host-modelgate_oidc";
/** How long a browser may spend at the provider between starting and finishing a sign-in. */
export const FLOW_MS = 10 * 60_000;

/** What one sign-in remembers between its start and its callback. */
export interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  redirect: string;
  next: string;
  /** Set when the sign-in is an MCP client's authorization request's (docs/mcp.md): its id, to go back to. */
  oauth?: string;
  expires_at: number;
}

const encoder = new TextEncoder();

async function flowMac(adminKey: string, payload: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(adminKey), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`modelgate oidc flow ${payload}`));
  return new Uint8Array(mac).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** A flow as the cookie carries it: its JSON in base64url, a dot, and its MAC. */
export async function sealFlow(adminKey: string, flow: Flow): Promise<string> {
  const payload = encoder.encode(JSON.stringify(flow)).toBase64({ alphabet: "base64url", omitPadding: true });
  return `${payload}.${await flowMac(adminKey, payload)}`;
}

/**
 * The Set-Cookie value carrying `flow`, or one removing it. SameSite=Lax, since the provider sends the browser back
 * with a top-level navigation from its own site, where a Strict cookie would stay behind.
 */
export function flowCookie(value: string | undefined, https: boolean): string {
  const scope = https ? "Path=/; HttpOnly; SameSite=Lax; Secure" : "Path=/ui/auth; HttpOnly; SameSite=Lax";
  const life = value === undefined ? "Max-Age=0" : `Max-Age=${FLOW_MS / 1000}`;
  return `${https ? HOST_FLOW_COOKIE : FLOW_COOKIE}=${value ?? ""}; ${life}; ${scope}`;
}

/** The flow the request's cookie carries, when its MAC is good and it has not expired; else undefined. */
export async function readFlow(req: Request, adminKey: string, https: boolean, now: number): Promise<Flow | undefined> {
  const wanted = https ? HOST_FLOW_COOKIE : FLOW_COOKIE;
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [name, value] = part.trim().split("=", 2);
    if (name !== wanted || !value) continue;
    const [payload, mac] = value.split(".", 2);
    if (!payload || !mac || !await sameSecret(mac, await flowMac(adminKey, payload))) return undefined;
    try {
      const flow = JSON.parse(new TextDecoder().decode(Uint8Array.fromBase64(payload, { alphabet: "base64url" })));
      return typeof flow?.expires_at === "number" && flow.expires_at > now ? flow as Flow : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Where a started flow's record is kept: a hash of its state, which only the browser's cookie holds. */
async function flowKey(state: string): Promise<Deno.KvKey> {
  return ["oidc_flow", await hashToken(state)];
}

/** Records that `flow` was started here, for its callback to consume; KV forgets it after the flow's lifetime. */
export async function rememberFlow(store: Store, flow: Flow): Promise<void> {
  const key = await flowKey(flow.state);
  await store.writes.write("oidc_flow", () => store.kv.set(key, true, { expireIn: FLOW_MS }));
}

/**
 * Consumes the record of the flow with `state`: true once, for the first callback on any instance; false when it was
 * consumed already (a replayed callback), or never made.
 */
export async function consumeFlow(store: Store, state: string): Promise<boolean> {
  const key = await flowKey(state);
  return await store.writes.write("oidc_flow", async () => {
    const entry = await store.kv.get<true>(key);
    if (entry.value === null) return false;
    return (await store.kv.atomic().check(entry).delete(key).commit()).ok;
  });
}
