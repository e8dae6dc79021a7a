/**
 * @module The admin service's operations on operators' keys: minting, listing and revoking them (an owner any role,
 * an admin only admin and viewer keys), and resolving a key to the actor it makes.
 */
import type { Config } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import type { Store } from "../access/store.ts";
import { invalidField } from "../core/validation.ts";
import type { Actor } from "./audit.ts";
import { type OperatorKey, operatorKeys } from "./operator_keys.ts";
import { notFound } from "./refusals.ts";
import { OperatorKeyCreate, parseInput } from "./schemas.ts";

/** How long an operator key lasts when its expiry is not given. */
const DEFAULT_KEY_DAYS = 90;

/** What the operator operations need of the service. */
export interface OperatorOpsContext {
  ctx: { store: Store; config: Config; actor: Actor; now(): Date };
  mayChange(): void;
  record(action: string, target: string, before: unknown, after: unknown): Promise<void>;
}

function refused(message: string): GatewayError {
  return new GatewayError("permission", message);
}

/** The operator operations, spread into the admin service. */
export function operatorOps({ ctx, mayChange, record }: OperatorOpsContext) {
  const keys = operatorKeys(ctx.store.kv, ctx.store.writes);
  const { actor } = ctx;

  /** Only an owner touches an owner's key, so an admin cannot mint or end a role above its own. */
  function mayHandle(role: OperatorKey["role"], verb: string): void {
    mayChange();
    if (role === "owner" && actor.role !== "owner") {
      throw refused(`The role "${actor.role}" of "${actor.name}" may not ${verb} an owner's key`);
    }
  }

  return {
    async createOperatorKey(input: unknown): Promise<{ key: OperatorKey; secret: string }> {
      mayChange();
      const body = parseInput(OperatorKeyCreate, input);
      mayHandle(body.role, "mint");
      const now = ctx.now();
      const expires = body.expires_at
        ? new Date(body.expires_at)
        : new Date(now.getTime() + DEFAULT_KEY_DAYS * 86_400_000);
      if (expires.getTime() <= now.getTime()) throw invalidField("expires_at", "must be in the future");
      const made = await keys.create({
        name: body.name,
        role: body.role,
        created_at: now.toISOString(),
        expires_at: expires.toISOString(),
        created_by: actor.name,
      });
      await record("operator_key.create", made.key.id, null, made.key);
      return made;
    },
    listOperatorKeys: (): Promise<OperatorKey[]> => keys.list(),
    async revokeOperatorKey(id: string): Promise<OperatorKey> {
      mayChange();
      const before = await keys.get(id);
      if (!before) throw notFound("Operator key", id);
      mayHandle(before.role, "revoke");
      const after = await keys.revoke(id) ?? before;
      await record("operator_key.revoke", id, before, after);
      return after;
    },
  };
}

/**
 * The actor an operator key makes; undefined when the secret is no key at all (the caller decides what a wrong
 * secret is), and a 401 when it is a key that is revoked or has expired.
 */
export async function keyActor(
  store: Store,
  secret: string,
  now: Date,
  from: Pick<Actor, "via" | "ip" | "user_agent">,
): Promise<Actor | undefined> {
  const key = await operatorKeys(store.kv, store.writes).bySecret(secret);
  if (!key) return undefined;
  if (key.revoked) throw new GatewayError("authentication", "Operator key is revoked");
  if (Date.parse(key.expires_at) <= now.getTime()) throw new GatewayError("authentication", "Operator key has expired");
  return { name: key.name, role: key.role, key_id: key.id, ...from };
}
