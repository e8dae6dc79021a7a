/**
 * @module The caller a batch's requests run as: its token and group as they are now, so a token disabled, expired,
 * moved to another group or suspended after the batch was made stops its requests as it would stop the same
 * requests sent alone.
 */
import { checkResolved } from "../../access/auth.ts";
import { suspensionOf } from "../../access/people.ts";
import type { Store } from "../../access/store.ts";
import type { RoleRule } from "../../core/config.ts";
import type { Principal } from "../../core/principal.ts";

/** Looks a batch's token up by its id; throws the 401 or 403 the token would get now. */
export type PrincipalOf = (tokenId: string) => Promise<Principal>;

/** Principals from the store, owners judged by the sign-in rules as a request with the token is. */
export function storePrincipals(store: Store, rules: readonly RoleRule[], now: () => Date): PrincipalOf {
  return async (tokenId) => {
    const token = await store.getToken(tokenId);
    if (!token) return checkResolved(null, now());
    const [group, suspended] = await Promise.all([
      store.getGroup(token.group),
      token.owner ? suspensionOf(store.kv, rules, token.owner) : undefined,
    ]);
    return checkResolved({ token, group, ...suspended ? { suspended } : {} }, now());
  };
}
