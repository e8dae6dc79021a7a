/**
 * @module Who runs which request of a batch: a request is claimed through KV with a lease that its runner renews
 * while it runs, so two instances never run it at once and one that dies loses only the requests it held, which
 * another takes once their leases run out; a result lands only under the claim that ran it, once.
 */
import { KEYS, type RunCounts } from "./records.ts";
import { cutParts, deletePrefix, writeBatch, writeParts } from "./chunks.ts";
import type { Build, Committer } from "./committer.ts";

/** Parts of a result that land in the same commit as its entry (KV's bound is about 800 KiB a commit). */
const INLINE_PARTS = 8;

/** A claim as kept: the instance holding it and when its lease ends. */
export interface ClaimEntry {
  instance: string;
  until: number;
}

/** A claim this instance holds. */
export interface Claim {
  batch: string;
  index: number;
  instance: string;
  /** The versionstamp of the claim as this instance last wrote it; any other write means it was lost. */
  versionstamp: string;
}

/** What a request's result entry says: its kind and where its line is. */
export interface DoneEntry {
  custom_id: string;
  kind: keyof RunCounts;
  nonce: string;
  parts: number;
}

/** Where a claim is to be made: the request, who claims it, for how long, and the time now. */
export interface ClaimAt {
  batch: string;
  index: number;
  instance: string;
  leaseMs: number;
  now: number;
  /** The batch's record as last read: the claim fails when it has changed since (a cancel). */
  batchVersionstamp?: string;
}

/**
 * What claims request `index` in an atomic operation (its checks and its write), when it has no result and no live
 * claim (none, or one whose lease has run out); undefined when another instance holds it or it is done.
 */
async function claimBuild(kv: Deno.Kv, at: ClaimAt): Promise<Build | undefined> {
  const [claim, done] = await kv.getMany<[ClaimEntry, DoneEntry]>([
    KEYS.claim(at.batch, at.index),
    KEYS.done(at.batch, at.index),
  ]);
  if (done.versionstamp !== null) return undefined;
  if (claim.value && claim.value.until > at.now) return undefined;
  const entry: ClaimEntry = { instance: at.instance, until: at.now + at.leaseMs };
  return (op) => {
    op.check({ key: claim.key, versionstamp: claim.versionstamp })
      .check({ key: done.key, versionstamp: null })
      .set(claim.key, entry, { expireIn: at.leaseMs * 4 });
    if (at.batchVersionstamp) op.check({ key: KEYS.batch(at.batch), versionstamp: at.batchVersionstamp });
  };
}

/** Claims request `index`; undefined when another instance holds it, it is done, or another claimed it first. */
export async function claimRequest(kv: Deno.Kv, at: ClaimAt): Promise<Claim | undefined> {
  const build = await claimBuild(kv, at);
  if (!build) return undefined;
  const op = kv.atomic();
  build(op);
  const made = await op.commit();
  if (!made.ok) return undefined;
  return { batch: at.batch, index: at.index, instance: at.instance, versionstamp: made.versionstamp };
}

/** Extends a held claim's lease; false when the claim was lost (its lease ran out and another took it). */
export async function renewClaim(kv: Deno.Kv, claim: Claim, leaseMs: number, now: number): Promise<boolean> {
  const key = KEYS.claim(claim.batch, claim.index);
  const entry: ClaimEntry = { instance: claim.instance, until: now + leaseMs };
  const renewed = await kv.atomic()
    .check({ key, versionstamp: claim.versionstamp })
    .set(key, entry, { expireIn: leaseMs * 4 })
    .commit();
  if (!renewed.ok) return false;
  claim.versionstamp = renewed.versionstamp;
  return true;
}

/** Gives a claim back unrun (the runner stops, or the token's limits have no room yet), so any instance may take it. */
export async function releaseClaim(kv: Deno.Kv, claim: Claim): Promise<void> {
  const key = KEYS.claim(claim.batch, claim.index);
  await kv.atomic().check({ key, versionstamp: claim.versionstamp }).delete(key).commit();
}

/** A result to keep: the request's id, its kind and its line in the protocol's format. */
export interface Result {
  custom_id: string;
  kind: keyof RunCounts;
  line: string;
  expireIn: number;
}

/**
 * Keeps a request's result line: the result entry, its parts, its count and the claim's end land in one commit
 * checked against the claim (a result of more parts than one commit takes is written first, under a name of this
 * run's own). False when the claim was lost; the other instance's result stands.
 */
export async function commitResult(kv: Deno.Kv, claim: Claim, result: Result): Promise<boolean> {
  return (await commitAndClaim(kv, claim, result)).kept;
}

/** Commits one operation at a time, ungrouped. */
function directCommitter(kv: Deno.Kv): Committer {
  return {
    commit(build) {
      const op = kv.atomic();
      build(op);
      return op.commit();
    },
  };
}

/**
 * {@linkcode commitResult}, claiming the request `next` names in the same commit, so a slot going on with its batch
 * writes once a request; through `committer`, with other slots' results. When that claim cannot be made, the result
 * is kept alone and `next` is left unclaimed.
 */
export async function commitAndClaim(
  kv: Deno.Kv,
  claim: Claim,
  result: Result,
  next?: ClaimAt,
  committer: Committer = directCommitter(kv),
): Promise<{ kept: boolean; next?: Claim }> {
  const nonce = crypto.randomUUID();
  const prefix = KEYS.result(claim.batch, claim.index, nonce);
  const parts = cutParts(result.line);
  const alone = parts.length > INLINE_PARTS;
  if (alone) {
    const writes = writeBatch(kv, result.expireIn);
    await writeParts(writes, prefix, result.line);
    await writes.flush();
  }
  const claimKey = KEYS.claim(claim.batch, claim.index);
  const doneKey = KEYS.done(claim.batch, claim.index);
  const done: DoneEntry = { custom_id: result.custom_id, kind: result.kind, nonce, parts: parts.length };
  const inline = alone ? [] : parts;
  const landing: Build = (op) => {
    op.check({ key: claimKey, versionstamp: claim.versionstamp })
      .check({ key: doneKey, versionstamp: null })
      .set(doneKey, done, { expireIn: result.expireIn })
      .sum(KEYS.count(claim.batch, result.kind), 1n)
      .delete(claimKey);
    for (const [index, part] of inline.entries()) op.set([...prefix, index], part, { expireIn: result.expireIn });
  };
  const bytes = inline.reduce((sum, part) => sum + part.byteLength, 512);
  const weight = { checks: 2, mutations: 3 + inline.length, bytes };
  const claimNext = next && await claimBuild(kv, next);
  if (next && claimNext) {
    const both = await committer.commit((op) => {
      landing(op);
      claimNext(op);
    }, { checks: weight.checks + 3, mutations: weight.mutations + 1, bytes: weight.bytes + 256 });
    if (both.ok) {
      return {
        kept: true,
        next: { batch: next.batch, index: next.index, instance: next.instance, versionstamp: both.versionstamp },
      };
    }
  }
  if ((await committer.commit(landing, weight)).ok) return { kept: true };
  if (alone) await deletePrefix(kv, prefix);
  return { kept: false };
}

/** Requests of a batch that an instance holds under a live lease now. */
export async function liveClaims(kv: Deno.Kv, batch: string, now: number): Promise<number> {
  let live = 0;
  for await (const entry of kv.list<ClaimEntry>({ prefix: KEYS.claims(batch) })) {
    if (entry.value.until > now) live++;
  }
  return live;
}

/** Indexes of a batch's requests with no result yet (claimed or not). */
export async function unfinished(kv: Deno.Kv, batch: string, total: number): Promise<number[]> {
  const done = new Set<number>();
  for await (const entry of kv.list({ prefix: KEYS.dones(batch) })) done.add(entry.key[2] as number);
  const left: number[] = [];
  for (let index = 0; index < total; index++) if (!done.has(index)) left.push(index);
  return left;
}
