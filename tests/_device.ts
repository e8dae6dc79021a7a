/**
 * @module The device sign-in under test: a gateway whose auth.oidc points at the test provider, on a clock the test
 * moves, a CLI whose waits move it, and the provider's user step completed as an account when the CLI shows its URL.
 */
import { startGateway } from "./_helpers.ts";
import type { TestProvider } from "./_oidc_provider.ts";

/** The config's `auth` section for `provider`: example.com people are members who may mint in `default`. */
export function authYaml(provider: TestProvider): string {
  return `auth:
  oidc:
    issuer: "${provider.issuer}"
    client_id: ${provider.clientId}
    client_secret_env: TEST_OIDC_SECRET
    scopes: [openid, email, profile, groups]
    roles:
      - { group: platform, role: admin }
      - { domain: example.com, role: member, token_groups: [default, oa] }
`;
}

/**
 * A gateway with sign-in through `provider`, on a clock the test moves, and a CLI whose waits move that clock once
 * the person has confirmed (so the first poll finds the confirmation, as a person's would after some seconds).
 */
export async function deviceSetup(provider: TestProvider, upstreamUrl: string) {
  let at = Date.now();
  const gw = await startGateway(upstreamUrl, {
    admin: true,
    extraYaml: authYaml(provider),
    env: { TEST_OIDC_SECRET: provider.clientSecret },
    now: () => new Date(at),
  });
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
