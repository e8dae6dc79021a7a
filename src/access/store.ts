/**
 * @module Tokens and groups in Deno KV. Only a token's SHA-256 hash is stored, never its secret.
 * Keys: ["token_hash", hash] -> TokenRecord (the one read auth needs), ["token", id] -> hash, ["group", name] -> Group,
 * and ["auth_version"], bumped in the same atomic write as every token or group change (and every change to whether a
 * person's tokens work, see people.ts) so caches can notice.
 */
import type { Limits } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import { fitsKey } from "../core/key_text.ts";
import { createKvWriter, type KvWriter, RETRY } from "../core/kv_write.ts";
import type { Group, TokenRecord } from "../core/principal.ts";
import { type DelayedKv, delayedKv, type KvCalls } from "./kv_delay.ts";
import { keepKvFilePrivate } from "./kv_file.ts";

/** The fields of a token an operator may change after creation. */
export type TokenPatch = Partial<Pick<TokenRecord, "name" | "group" | "expires_at" | "disabled" | "limits">>;

/** The fields of a group an operator may change after creation. */
export type GroupPatch = Partial<Pick<Group, "listing" | "models" | "limits" | "mcp" | "guardrails">>;

/** The key bumped with every token or group write. */
export const AUTH_VERSION_KEY: Deno.KvKey = ["auth_version"];

/** Options for {@linkcode Store.createToken}. */
export interface CreateTokenOptions {
  group: string;
  name?: string;
  expiresAt?: Date;
  limits?: Limits;
  /** The person it belongs to, see {@linkcode TokenRecord.owner}. */
  owner?: string;
  now?: Date;
}

/** Token and group storage over one Deno KV handle. */
export interface Store {
  readonly kv: Deno.Kv;
  /** How every write path of this process commits to `kv`: bounded retries, give-ups logged and counted. */
  readonly writes: KvWriter;
  /** KV calls by kind, only while the round-trip seam of access/kv_delay.ts is on. */
  kvCalls?(): KvCalls;
  createToken(options: CreateTokenOptions): Promise<{ secret: string; record: TokenRecord }>;
  findToken(secret: string): Promise<TokenRecord | null>;
  findTokenByHash(hash: string): Promise<TokenRecord | null>;
  getToken(id: string): Promise<TokenRecord | null>;
  listTokens(): Promise<TokenRecord[]>;
  /** Applies `patch`; null when there is no such token. */
  updateToken(id: string, patch: TokenPatch): Promise<TokenRecord | null>;
  revokeToken(id: string): Promise<TokenRecord | null>;
  /** Writes a group whatever is there (the config's groups at start). */
  putGroup(group: Group): Promise<void>;
  /** Writes a new group; false when one of that name exists. */
  createGroup(group: Group): Promise<boolean>;
  /** Applies `patch`; null when there is no such group. */
  updateGroup(name: string, patch: GroupPatch): Promise<Group | null>;
  getGroup(name: string): Promise<Group | null>;
  listGroups(): Promise<Group[]>;
  /** Deletes a group; false when there was none. */
  deleteGroup(name: string): Promise<boolean>;
  /**
   * Commits `op` with the auth version bumped, as token and group writes are, for another change that decides
   * whether a token works (a person's role); false when one of its checks failed.
   */
  commitAuth(op: Deno.AtomicOperation): Promise<boolean>;
  /** Calls `listener` after every token or group write made through this store; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  close(): void;
}

/** SHA-256 of a token secret as lowercase hex. */
export async function hashToken(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A new token secret: `sk-` and 32 bytes of crypto randomness in base64url (43 characters). */
export function newTokenSecret(): string {
  return `sk-${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
}

function newTokenId(): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
  return `tok_${hex.join("")}`;
}

/** Options for {@linkcode createStore}. */
export interface StoreOptions {
  /** Where give-ups of KV writes are logged. */
  log?(line: Record<string, unknown>): void;
  /** The writer to commit through; by default one made with `log`. */
  writes?: KvWriter;
  /** With {@linkcode openStore}: every KV call waits this long (the test seam of access/kv_delay.ts). */
  rttMs?: number;
  /** The call counts of a delayed handle. */
  kvCalls?(): KvCalls;
}

/** A group as stored: only its own fields, copied. */
function storedGroup(group: Group): Group {
  const stored: Group = { name: group.name, listing: group.listing, models: [...group.models] };
  if (group.limits) stored.limits = { ...group.limits };
  if (group.mcp) stored.mcp = structuredClone(group.mcp);
  if (group.guardrails?.length) stored.guardrails = [...group.guardrails];
  return stored;
}

/** A 409 for a change that another change overtook. */
function overtaken(message: string): GatewayError {
  return new GatewayError("invalid_request", message, { status: 409, code: "conflict" });
}

/** Wraps an open KV handle as a Store. */
export function createStore(kv: Deno.Kv, options: StoreOptions = {}): Store {
  const listeners = new Set<() => void>();
  const writes = options.writes ?? createKvWriter({ log: options.log ?? (() => {}) });
  /** Commits `op` with the auth version bumped; RETRY when one of its checks failed. */
  async function commit(op: Deno.AtomicOperation): Promise<true | typeof RETRY> {
    const result = await op.sum(AUTH_VERSION_KEY, 1n).commit();
    if (!result.ok) return RETRY;
    for (const listener of listeners) listener();
    return true;
  }
  async function tokenEntry(id: string) {
    // An id or name too long for a key was never stored (here and for groups below); KV would refuse the read.
    if (!fitsKey(id)) return null;
    const hash = (await kv.get<string>(["token", id])).value;
    return hash ? { hash, entry: await kv.get<TokenRecord>(["token_hash", hash]) } : null;
  }
  function updateToken(id: string, patch: TokenPatch): Promise<TokenRecord | null> {
    // Optimistic: read again and retry when another writer changed the record between the read and the write.
    return writes.write("token_update", async () => {
      const found = await tokenEntry(id);
      if (!found?.entry.value) return null;
      const record: TokenRecord = { ...found.entry.value, ...patch };
      if (record.limits === undefined) delete record.limits;
      const op = kv.atomic().check(found.entry).set(["token_hash", found.hash], record);
      if (patch.group !== undefined) {
        // A token moved to a group must find it there when the move lands.
        const group = await kv.get(["group", patch.group]);
        if (!group.value) {
          throw overtaken(`Cannot move token: no group "${patch.group}" (it may just have been deleted)`);
        }
        op.check(group);
      }
      return await commit(op) === RETRY ? RETRY : record;
    });
  }
  return {
    kv,
    writes,
    kvCalls: options.kvCalls,
    createToken({ group, name, expiresAt, limits, owner, now = new Date() }) {
      return writes.write("token_create", async () => {
        const groupEntry = await kv.get(["group", group]);
        if (!groupEntry.value) {
          throw overtaken(`Cannot create token: no group "${group}" (it may just have been deleted)`);
        }
        const secret = newTokenSecret();
        const hash = await hashToken(secret);
        const id = newTokenId();
        const record: TokenRecord = {
          id,
          name: name ?? id,
          group,
          created_at: now.toISOString(),
          expires_at: expiresAt ? expiresAt.toISOString() : null,
          disabled: false,
        };
        if (limits) record.limits = { ...limits };
        if (owner !== undefined) record.owner = owner;
        // The group must still be there when the token lands; a lost check (or an id taken) tries again.
        const done = await commit(
          kv.atomic().check(groupEntry).check({ key: ["token", id], versionstamp: null })
            .set(["token", id], hash).set(["token_hash", hash], record),
        );
        return done === RETRY ? RETRY : { secret, record };
      });
    },
    async findToken(secret) {
      return (await kv.get<TokenRecord>(["token_hash", await hashToken(secret)])).value;
    },
    async findTokenByHash(hash) {
      return (await kv.get<TokenRecord>(["token_hash", hash])).value;
    },
    async getToken(id) {
      return (await tokenEntry(id))?.entry.value ?? null;
    },
    async listTokens() {
      const out: TokenRecord[] = [];
      for await (const entry of kv.list<TokenRecord>({ prefix: ["token_hash"] })) out.push(entry.value);
      return out.sort((a, b) => a.created_at.localeCompare(b.created_at));
    },
    updateToken,
    revokeToken: (id) => updateToken(id, { disabled: true }),
    async putGroup(group) {
      await writes.write("group_put", () => commit(kv.atomic().set(["group", group.name], storedGroup(group))));
    },
    createGroup(group) {
      return writes.write("group_create", async () => {
        const entry = await kv.get(["group", group.name]);
        if (entry.value) return false;
        return await commit(kv.atomic().check(entry).set(["group", group.name], storedGroup(group)));
      });
    },
    updateGroup(name, patch) {
      return writes.write("group_update", async () => {
        if (!fitsKey(name)) return null;
        const entry = await kv.get<Group>(["group", name]);
        if (!entry.value) return null;
        // A patch's `limits: undefined` (or `mcp: undefined`) clears them: storedGroup keeps only what is there.
        const next = storedGroup({ ...entry.value, ...patch });
        return await commit(kv.atomic().check(entry).set(["group", name], next)) === RETRY ? RETRY : next;
      });
    },
    async getGroup(name) {
      if (!fitsKey(name)) return null;
      return (await kv.get<Group>(["group", name])).value;
    },
    async listGroups() {
      const out: Group[] = [];
      for await (const entry of kv.list<Group>({ prefix: ["group"] })) out.push(entry.value);
      return out;
    },
    deleteGroup(name) {
      return writes.write("group_delete", async () => {
        if (!fitsKey(name)) return false;
        const entry = await kv.get(["group", name]);
        if (!entry.value) return false;
        return await commit(kv.atomic().check(entry).delete(["group", name]));
      });
    },
    commitAuth: async (op) => await commit(op) === true,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close() {
      kv.close();
    },
  };
}

/**
 * Opens KV at `path` (":memory:" for tests), first creating the parent folder of a file path and keeping the file
 * readable by its owner only; undefined opens the runtime's default KV (the managed one on Deno Deploy) and touches
 * no file.
 */
export async function openStore(path: string | undefined, options: StoreOptions = {}): Promise<Store> {
  if (path !== undefined && path !== ":memory:" && !path.includes("://")) {
    const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
    if (dir) await Deno.mkdir(dir, { recursive: true });
    await keepKvFilePrivate(path, options.log ?? (() => {}));
  }
  const kv = await Deno.openKv(path);
  if (options.rttMs === undefined) return createStore(kv, options);
  const delayed: DelayedKv = delayedKv(kv, options.rttMs);
  return createStore(delayed.kv, { ...options, kvCalls: delayed.calls });
}

/** Writes the config's groups into KV; the config wins for the names it defines. */
export async function seedGroups(store: Store, groups: readonly Group[]): Promise<void> {
  for (const group of groups) await store.putGroup(group);
}
