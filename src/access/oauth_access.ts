/**
 * @module Who an OAuth grant of /mcp acts as now: a person is judged at every use by their role as it stands (an
 * operator's change in KV, else the config's rules on the groups of their last sign-in) and acts in the first of its
 * token groups, as `modelgate login` gives them; a grant made with one of the gateway's tokens acts as that token,
 * while it works. An access token is checked against its grant, its expiry and the resource it is for.
 */
import type { RoleRule } from "../core/config.ts";
import type { Group, Principal, TokenRecord } from "../core/principal.ts";
import { checkResolved, type Credentials } from "./auth.ts";
import { grantIdOf, sameResource } from "./oauth_rules.ts";
import { grantOfAccessToken, type OAuthGrant, type OAuthSubject } from "./oauth_grants.ts";
import { grantNow, overrideKey, type PersonSeen, personTag, type RoleOverride, seenKey } from "./people.ts";
import type { PersonRole } from "./roles.ts";
import type { Store } from "./store.ts";
import { GatewayError } from "../core/errors.ts";

/** What judging a grant's subject needs. */
export interface SubjectDeps {
  store: Store;
  /** The token lookups of the instance (cached), for grants made with a token. */
  credentials: Credentials;
  rules: readonly RoleRule[];
  now(): Date;
}

/** What a subject may do now: the group it acts in, and for a person their role. */
export interface Standing {
  group: Group;
  /** The token it acts as, when the grant was made with one. */
  token?: TokenRecord;
  /** The person's email and role, for a person. */
  person?: { email: string; role: PersonRole; token_groups: string[] };
}

/** Why a subject may no longer act: said to the person, and recorded when their grant is revoked for it. */
export class NoStanding extends Error {}

/** The standing of a person now, or the reason they have none. */
async function personStanding(deps: SubjectDeps, email: string): Promise<Standing> {
  const tag = await personTag(email);
  const [override, seen] = await deps.store.kv.getMany<[RoleOverride, PersonSeen]>([overrideKey(tag), seenKey(tag)]);
  const grant = grantNow({ email, groups: seen.value?.groups ?? [] }, deps.rules, override.value);
  if (!grant) {
    throw new NoStanding(
      override.value?.role === null
        ? `${email} was removed by an operator`
        : `${email} matches no sign-in rule of this gateway`,
    );
  }
  const name = grant.token_groups[0];
  if (name === undefined) throw new NoStanding(`${email} (${grant.role}) has no token groups, so no group on /mcp`);
  const group = await deps.store.getGroup(name);
  if (!group) throw new NoStanding(`the group "${name}" of ${email} no longer exists`);
  return { group, person: { email, ...grant } };
}

/** The standing of a grant's subject now; throws {@linkcode NoStanding} when it may not act. */
export async function standingOf(deps: SubjectDeps, subject: OAuthSubject): Promise<Standing> {
  if (subject.kind === "person") return await personStanding(deps, subject.email);
  try {
    const principal = checkResolved(await deps.credentials.byHash(subject.token_hash), deps.now());
    return { group: principal.group, token: principal.token };
  } catch (err) {
    if (err instanceof GatewayError) {
      throw new NoStanding(`its token ${subject.token_id} no longer works: ${err.message}`);
    }
    throw err;
  }
}

/** The principal a grant's calls run as: its token's, or for a person one named after the grant. */
export function principalOf(grant: OAuthGrant, standing: Standing): Principal {
  if (standing.token) return { token: standing.token, group: standing.group };
  const token: TokenRecord = {
    id: grant.id,
    name: `OAuth: ${grant.client_name}`,
    group: standing.group.name,
    created_at: grant.created_at,
    expires_at: null,
    disabled: false,
    owner: standing.person!.email,
  };
  return { token, group: standing.group };
}

/** How an access token was judged. */
export type AccessCheck =
  | { ok: true; principal: Principal; grant: OAuthGrant; standing: Standing }
  | { ok: false; why: string; grant?: OAuthGrant; revoke?: boolean };

/**
 * Judges an access token presented for `resource`: its grant must exist, the token must be its and unexpired, bound to
 * this resource, and its subject must still stand. A subject that no longer stands is answered with `revoke`: the
 * grant is to end, not only this call.
 */
export async function checkAccessToken(deps: SubjectDeps, token: string, resource: string): Promise<AccessCheck> {
  const id = grantIdOf(token);
  const grant = id && await grantOfAccessToken(deps.store, token, id, deps.now().getTime());
  if (!grant) return { ok: false, why: "The access token is unknown, revoked or expired" };
  // The SDK's own bearer check leaves the audience to the verifier: a token for another resource is refused here.
  if (!sameResource(resource, grant.resource)) {
    return { ok: false, why: `The access token is for ${grant.resource}, not ${resource}`, grant };
  }
  try {
    const standing = await standingOf(deps, grant.subject);
    return { ok: true, principal: principalOf(grant, standing), grant, standing };
  } catch (err) {
    if (!(err instanceof NoStanding)) throw err;
    return { ok: false, why: `The grant no longer stands: ${err.message}`, grant, revoke: true };
  }
}
