/**
 * @module The admin service's operations on the OAuth grants and clients of /mcp: listing the clients that registered
 * and the grants people gave them (with the group each acts in now), and revoking a grant, or every grant of a person
 * when an operator removes them or leaves them no group; every revocation is recorded in the audit trail.
 */
import { storeCredentials } from "../access/auth.ts";
import { NoStanding, standingOf } from "../access/oauth_access.ts";
import { listClients, type OAuthClient } from "../access/oauth_clients.ts";
import { type GrantView, grantView, listGrants, revokeGrant } from "../access/oauth_grants.ts";
import type { OperatorOpsContext } from "./operator_ops.ts";
import { notFound } from "./refusals.ts";

/** The OAuth operations, spread into the admin service. */
export function oauthOps({ ctx, mayChange, record }: OperatorOpsContext) {
  const { store } = ctx;
  const subjects = {
    store,
    credentials: storeCredentials(store),
    rules: ctx.config.auth.oidc?.roles ?? [],
    now: ctx.now,
  };

  async function revoke(id: string, reason: string): Promise<GrantView | undefined> {
    const revoked = await revokeGrant(store, id);
    if (!revoked) return undefined;
    const view = grantView(revoked);
    await record("oauth_grant.revoke", id, view, { reason, client_name: revoked.client_name });
    return view;
  }

  return {
    /** Every live grant, oldest first, with the group it acts in now (none when its person no longer stands). */
    async listOAuthGrants(): Promise<GrantView[]> {
      return await Promise.all((await listGrants(store)).map(async (grant) => {
        try {
          return grantView(grant, (await standingOf(subjects, grant.subject)).group.name);
        } catch (err) {
          if (err instanceof NoStanding) return grantView(grant);
          throw err;
        }
      }));
    },
    /** The clients registered dynamically, still kept. */
    listOAuthClients(): Promise<OAuthClient[]> {
      return listClients(store);
    },
    /** Revokes a grant: its tokens answer 401 from the next call on, on every instance. */
    async revokeOAuthGrant(id: string): Promise<GrantView> {
      mayChange();
      return await revoke(id, `revoked by ${ctx.actor.name}`) ?? Promise.reject(notFound("OAuth grant", id));
    },
    /** Revokes every grant of a person (removed, or left without a group); answers how many. */
    async revokeOAuthGrantsOf(email: string, reason: string): Promise<number> {
      mayChange();
      let count = 0;
      for (const grant of await listGrants(store)) {
        const subject = grant.subject;
        const theirs = subject.kind === "person" ? subject.email === email : subject.owner === email;
        if (theirs && await revoke(grant.id, reason)) count++;
      }
      return count;
    },
  };
}
