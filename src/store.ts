/**
 * @module Tokens and groups in Deno KV. Only a token's SHA-256 hash is stored, never its secret.
 * Keys: ["token_hash", hash] -> TokenRecord (the one read auth needs), ["token", id] -> hash, ["group", name] -> Group.
 */
import type { GroupConfig } from "./config.ts";

/** A token as stored; the secret itself is never kept. */
export interface TokenRecord {
  id: string;
  name: string;
  group: string;
  created_at: string;
  expires_at: string | null;
  disabled: boolean;
}

/** A group as stored: the models it enables and its listing shape. */
export type Group = GroupConfig;

/** Options for {@linkcode Store.createToken}. */
export interface CreateTokenOptions {
  group: string;
  name?: string;
  expiresAt?: Date;
  now?: Date;
}

/** Token and group storage over one Deno KV handle. */
export interface Store {
  readonly kv: Deno.Kv;
  createToken(options: CreateTokenOptions): Promise<{ secret: string; record: TokenRecord }>;
  findToken(secret: string): Promise<TokenRecord | null>;
  listTokens(): Promise<TokenRecord[]>;
  revokeToken(id: string): Promise<TokenRecord | null>;
  putGroup(group: Group): Promise<void>;
  getGroup(name: string): Promise<Group | null>;
  listGroups(): Promise<Group[]>;
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

/** Wraps an open KV handle as a Store. */
export function createStore(kv: Deno.Kv): Store {
  return {
    kv,
    async createToken({ group, name, expiresAt, now = new Date() }) {
      if (!(await kv.get(["group", group])).value) throw new RangeError(`Cannot create token: no group "${group}"`);
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
      const result = await kv.atomic().check({ key: ["token", id], versionstamp: null })
        .set(["token", id], hash).set(["token_hash", hash], record).commit();
      if (!result.ok) throw new Error("Cannot create token: id collision");
      return { secret, record };
    },
    async findToken(secret) {
      return (await kv.get<TokenRecord>(["token_hash", await hashToken(secret)])).value;
    },
    async listTokens() {
      const out: TokenRecord[] = [];
      for await (const entry of kv.list<TokenRecord>({ prefix: ["token_hash"] })) out.push(entry.value);
      return out.sort((a, b) => a.created_at.localeCompare(b.created_at));
    },
    async revokeToken(id) {
      const hash = (await kv.get<string>(["token", id])).value;
      if (!hash) return null;
      const entry = await kv.get<TokenRecord>(["token_hash", hash]);
      if (!entry.value) return null;
      const record = { ...entry.value, disabled: true };
      await kv.set(["token_hash", hash], record);
      return record;
    },
    async putGroup(group) {
      await kv.set(["group", group.name], { name: group.name, listing: group.listing, models: [...group.models] });
    },
    async getGroup(name) {
      return (await kv.get<Group>(["group", name])).value;
    },
    async listGroups() {
      const out: Group[] = [];
      for await (const entry of kv.list<Group>({ prefix: ["group"] })) out.push(entry.value);
      return out;
    },
    close() {
      kv.close();
    },
  };
}

/**
 * Opens KV at `path` (":memory:" for tests) and creates the parent folder of a file path; undefined opens the
 * runtime's default KV (the managed one on Deno Deploy) and touches no file.
 */
export async function openStore(path: string | undefined): Promise<Store> {
  if (path === undefined) return createStore(await Deno.openKv());
  if (path !== ":memory:" && !path.includes("://")) {
    const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
    if (dir) await Deno.mkdir(dir, { recursive: true });
  }
  return createStore(await Deno.openKv(path));
}

/** Writes the config's groups into KV; the config wins for the names it defines. */
export async function seedGroups(store: Store, groups: readonly Group[]): Promise<void> {
  for (const group of groups) await store.putGroup(group);
}
