/**
 * @module The device authorization grant (RFC 8628) brokered for the CLI: the gateway starts a grant at the identity
 * provider with its own client credentials, keeps it in KV under a handle of its own (so any instance can answer a
 * poll, until the grant expires), polls the provider's token endpoint when the CLI polls (never faster than the
 * provider's interval) and hands back the person the verified id_token names. A grant that gave its id_token is
 * deleted at once; an expired one is kept for a while, so a late poll is told `expired_token`, not that its code is
 * unknown. Keys: ["device_grant", sha256(handle)] -> PendingGrant.
 */
import type { OidcConfig } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import { type OidcClient, randomToken, type SignedIn } from "./oidc.ts";
import { hashToken } from "./store.ts";

/** What the CLI is told when a grant starts (RFC 8628, section 3.2), with the gateway's handle as device_code. */
export interface DeviceStart {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  interval: number;
  expires_in: number;
}

/** A grant waiting for its person, as KV keeps it; the provider's device code never leaves the gateway. */
interface PendingGrant {
  device_code: string;
  interval_s: number;
  /** Epoch ms before which the provider is not asked again. */
  next_poll_at: number;
  expires_at: number;
}

/** RFC 8628, section 3.4. */
const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";
/** RFC 8628, section 3.2: the interval when the provider names none. */
const DEFAULT_INTERVAL_S = 5;
/** RFC 8628, section 3.5: a client told to slow down waits 5 seconds longer from then on. */
const SLOW_DOWN_S = 5;
/** The longest a grant is kept, whatever the provider says: a person confirms within minutes or starts again. */
const MAX_EXPIRES_S = 1800;
/** How long an expired grant is kept to answer `expired_token` (RFC 8628, section 3.5) before it is forgotten. */
export const EXPIRED_KEPT_MS = 3_600_000;

/**
 * An answer in the OAuth error shape (`error`, `error_description`; RFC 8628, section 3.5): a 400 with one of the
 * RFC's codes unless `status` says otherwise.
 */
export function deviceError(code: string, description: string, status = 400): GatewayError {
  return new GatewayError(status >= 500 ? "upstream" : "invalid_request", description, { code, status });
}

const pending = () => deviceError("authorization_pending", "Waiting for the person to confirm the code");
const slowDown = (why: string) => deviceError("slow_down", why);

/** What the broker needs. */
export interface DeviceBrokerOptions {
  config: OidcConfig;
  client: OidcClient;
  kv: Deno.Kv;
  now(): Date;
}

/** A positive whole number of seconds from a provider's answer, or `fallback`. */
function seconds(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.ceil(value) : fallback;
}

/** How long KV keeps `grant` from `now`: until it expires, and {@linkcode EXPIRED_KEPT_MS} after. */
function keepFor(grant: PendingGrant, now: number): number {
  return Math.max(1, grant.expires_at - now) + EXPIRED_KEPT_MS;
}

/** The broker over one provider and one KV. */
export function deviceBroker(options: DeviceBrokerOptions) {
  const { config, client, kv } = options;
  const grantKey = async (handle: string): Promise<Deno.KvKey> => ["device_grant", await hashToken(handle)];

  /** POSTs a form to the provider as this client, naming the client in the form too (RFC 8628, section 3.1). */
  const callProvider = (url: string, params: Record<string, string>) =>
    client.postForm(url, { client_id: config.client_id, ...params });

  return {
    /** Starts a grant at the provider and keeps it; what the CLI shows the person and polls with. */
    async start(): Promise<DeviceStart> {
      const endpoint = (await client.metadata()).device_authorization_endpoint;
      if (!endpoint) {
        throw deviceError("unsupported_grant_type", "The identity provider offers no device authorization grant");
      }
      const answer = await callProvider(endpoint, { scope: config.scopes.join(" ") });
      const body = answer?.body ?? {};
      const { device_code, user_code, verification_uri } = body;
      if (answer?.status !== 200 || ![device_code, user_code, verification_uri].every((v) => typeof v === "string")) {
        const why = typeof body.error === "string" ? ` (${body.error})` : "";
        throw deviceError(
          "server_error",
          `The identity provider did not start a sign-in${why}; try again shortly`,
          502,
        );
      }
      const interval = seconds(body.interval, DEFAULT_INTERVAL_S);
      const expiresIn = Math.min(seconds(body.expires_in, MAX_EXPIRES_S), MAX_EXPIRES_S);
      const now = options.now().getTime();
      const handle = randomToken();
      const grant: PendingGrant = {
        device_code: device_code as string,
        interval_s: interval,
        next_poll_at: now + interval * 1000,
        expires_at: now + expiresIn * 1000,
      };
      await kv.set(await grantKey(handle), grant, { expireIn: keepFor(grant, now) });
      const complete = body.verification_uri_complete;
      return {
        device_code: handle,
        user_code: user_code as string,
        verification_uri: verification_uri as string,
        verification_uri_complete: typeof complete === "string" ? complete : verification_uri as string,
        interval,
        expires_in: expiresIn,
      };
    },

    /**
     * Asks the provider once whether the person has confirmed, when the grant's interval has passed; throws the
     * RFC's errors as {@linkcode deviceError}s. `onGuess` runs for a poll that should not have been made (an unknown
     * handle, or one polled before its interval), so the caller can charge the address.
     */
    async poll(handle: string, onGuess: () => void): Promise<SignedIn> {
      const key = await grantKey(handle);
      const entry = await kv.get<PendingGrant>(key);
      const grant = entry.value;
      const now = options.now().getTime();
      if (!grant || grant.expires_at + EXPIRED_KEPT_MS <= now) {
        onGuess();
        throw deviceError("invalid_grant", "Unknown or finished device_code; start the sign-in again");
      }
      if (grant.expires_at <= now) {
        throw deviceError("expired_token", "The code expired before it was confirmed; start the sign-in again");
      }
      if (now < grant.next_poll_at) {
        onGuess();
        throw slowDown(`Polled before the interval of ${grant.interval_s} s had passed`);
      }
      // One poll at a time reaches the provider, whichever instance answers it.
      const claimed = { ...grant, next_poll_at: now + grant.interval_s * 1000 };
      const won = await kv.atomic().check(entry).set(key, claimed, { expireIn: keepFor(grant, now) }).commit();
      if (!won.ok) throw pending();
      const meta = await client.metadata();
      const answer = await callProvider(meta.token_endpoint, {
        grant_type: GRANT_TYPE,
        device_code: grant.device_code,
      });
      if (!answer || answer.status >= 500) {
        await kv.set(key, { ...claimed, interval_s: grant.interval_s + SLOW_DOWN_S }, {
          expireIn: keepFor(grant, now),
        });
        throw slowDown("The identity provider did not answer; polling more slowly");
      }
      const error = answer.body.error;
      if (answer.status === 200 && typeof answer.body.id_token === "string") {
        // Used once: a replayed device_code is unknown from now on, and the provider is not asked again.
        await kv.delete(key);
        return await client.verifyIdToken(answer.body.id_token);
      }
      if (error === "authorization_pending") throw pending();
      if (error === "slow_down") {
        await kv.set(key, { ...claimed, interval_s: grant.interval_s + SLOW_DOWN_S }, {
          expireIn: keepFor(grant, now),
        });
        throw slowDown("The identity provider asked to poll more slowly");
      }
      await kv.delete(key);
      if (error === "access_denied") {
        throw deviceError("access_denied", "The sign-in was declined at the identity provider");
      }
      if (error === "expired_token") {
        throw deviceError("expired_token", "The code expired before it was confirmed; start the sign-in again");
      }
      const why = typeof error === "string" ? error : `status ${answer.status}`;
      throw deviceError("invalid_grant", `The identity provider refused the sign-in (${why}); start it again`);
    },
  };
}

/** The broker's type. */
export type DeviceBroker = ReturnType<typeof deviceBroker>;
