/**
 * @module Operators' personal admin API keys in KV, hashed like client tokens: `mgk-` secrets shown once, each with
 * a name (the person), a role and an expiry. Keys: ["operator_key_hash", hash] -> OperatorKey (what auth reads),
 * ["operator_key", id] -> hash.
 */
import { hashToken } from "../access/store.ts";
import { type KvWriter, RETRY } from "../core/kv_write.ts";
import type { Role } from "./audit.ts";

/** An operator key as stored and shown; the secret itself is never kept. */
export interface OperatorKey {
  id: string;
  /** Who holds it, e.g. an email address; changes made with it are recorded under this name. */
  name: string;
  role: Role;
  created_at: string;
  expires_at: string;
  /** Who minted it, as the audit trail names actors. */
  created_by: string;
  revoked: boolean;
}

/** The prefix that tells an operator key from the admin key and from client tokens (`sk-`). */
export const OPERATOR_KEY_PREFIX = "mgk-";

function randomText(bytes: number): string {
  return crypto.getRandomValues(new Uint8Array(bytes)).toBase64({ alphabet: "base64url", omitPadding: true });
}

/** Operator keys over one KV. */
export function operatorKeys(kv: Deno.Kv, writes: KvWriter) {
  async function hashOf(id: string): Promise<string | null> {
    return (await kv.get<string>(["operator_key", id])).value;
  }
  return {
    async create(
      key: Omit<OperatorKey, "id" | "revoked">,
    ): Promise<{ key: OperatorKey; secret: string }> {
      const secret = `${OPERATOR_KEY_PREFIX}${randomText(32)}`;
      const hash = await hashToken(secret);
      const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
      const record: OperatorKey = { id: `opk_${hex.join("")}`, ...key, revoked: false };
      await writes.write(
        "operator_key",
        () => kv.atomic().set(["operator_key", record.id], hash).set(["operator_key_hash", hash], record).commit(),
      );
      return { key: record, secret };
    },
    /** The key with this secret, whatever its state; null for a secret that is no key. */
    async bySecret(secret: string): Promise<OperatorKey | null> {
      if (!secret.startsWith(OPERATOR_KEY_PREFIX)) return null;
      return (await kv.get<OperatorKey>(["operator_key_hash", await hashToken(secret)])).value;
    },
    async get(id: string): Promise<OperatorKey | null> {
      const hash = await hashOf(id);
      return hash ? (await kv.get<OperatorKey>(["operator_key_hash", hash])).value : null;
    },
    async list(): Promise<OperatorKey[]> {
      const out: OperatorKey[] = [];
      for await (const entry of kv.list<OperatorKey>({ prefix: ["operator_key_hash"] })) out.push(entry.value);
      return out.sort((a, b) => a.created_at.localeCompare(b.created_at));
    },
    /** Marks a key revoked (it stays listed, so the trail's names keep their meaning); null when there is none. */
    async revoke(id: string): Promise<OperatorKey | null> {
      const hash = await hashOf(id);
      if (!hash) return null;
      return await writes.write("operator_key", async () => {
        const entry = await kv.get<OperatorKey>(["operator_key_hash", hash]);
        if (!entry.value) return null;
        const record = { ...entry.value, revoked: true };
        const done = await kv.atomic().check(entry).set(["operator_key_hash", hash], record).commit();
        return done.ok ? record : RETRY;
      });
    },
  };
}

/** The operator keys' type, for callers that receive them. */
export type OperatorKeys = ReturnType<typeof operatorKeys>;
