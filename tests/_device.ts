/**
 * @module The device sign-in under test: a gateway signing in through the test provider (example.com people are
 * members who may mint in `default` and `oa`), on a clock the test moves (its KV's entries expire by it too), a CLI
 * whose waits move it, and the provider's user step completed as an account when the CLI shows its URL.
 */
import { clockedKv } from "./_clocked_kv.ts";
import type { OidcGatewayOptions, TestProvider } from "./_oidc_provider.ts";
import { startOidcGateway } from "./_oidc_provider.ts";

/** The rules the device tests sign in under. */
export const DEVICE_ROLES = [
  "{ group: platform, role: admin }",
  "{ domain: example.com, role: member, token_groups: [default, oa] }",
];

/** A gateway signing in through `provider` under {@linkcode DEVICE_ROLES}. */
export function startDeviceGateway(
  provider: TestProvider,
  upstreamUrl: string,
  options: Omit<OidcGatewayOptions, "roles"> = {},
) {
  return startOidcGateway(provider, upstreamUrl, { roles: DEVICE_ROLES, ...options });
}

/**
 * A gateway signing in through `provider`, on a clock the test moves (KV drops an entry once that clock passes its
 * `expireIn`), and a CLI whose waits move that clock once the person has confirmed (so the first poll finds the
 * confirmation, as a person's would after some seconds). `options` may add a `fetch` for the gateway.
 */
export async function deviceSetup(
  provider: TestProvider,
  upstreamUrl: string,
  options: Pick<OidcGatewayOptions, "fetch"> = {},
) {
  let at = Date.now();
  const kv = await Deno.openKv(":memory:");
  const gw = await startDeviceGateway(provider, upstreamUrl, {
    ...options,
    kv: clockedKv(kv, () => at),
    now: () => new Date(at),
  });
  // The gateway leaves a KV it was given open; this one is the setup's own.
  const stop = gw[Symbol.asyncDispose].bind(gw);
  gw[Symbol.asyncDispose] = async () => {
    try {
      await stop();
    } finally {
      kv.close();
    }
  };
  const confirmed = Promise.withResolvers<void>();
  const waits: number[] = [];
  return {
    gw,
    advance: (ms: number) => at += ms,
    confirmed,
    waits,
    seams: {
      now: () => at,
      async sleep(ms: number) {
        waits.push(ms);
        await confirmed.promise;
        at += ms;
      },
    },
  };
}

/** Answers the URL line of a login's output and completes the provider's user step there as `login`. */
export function confirmAs(provider: TestProvider, login: string, done: PromiseWithResolvers<void>) {
  let started = false;
  return (line: string) => {
    if (started || !line.startsWith(`${provider.issuer}/`)) return;
    started = true;
    provider.complete(line, login).then(() => done.resolve(), done.reject);
  };
}
