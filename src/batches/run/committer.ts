/**
 * @module Group commits: the results the slots of one instance keep (each with the claim of the slot's next request)
 * land together, as many as are waiting while the previous commit is under way, in one atomic commit within KV's
 * bounds. A commit is one write to the disk, so this is what bounds a batch's requests a second; a group one of whose
 * checks fails is committed again one by one, so each result still lands or fails by its own checks alone.
 */

/** Adds one result's checks and mutations to an atomic operation. */
export type Build = (op: Deno.AtomicOperation) => void;

/** What one result's commit weighs against KV's bounds on an atomic commit. */
export interface Weight {
  checks: number;
  mutations: number;
  bytes: number;
}

/** Commits results, grouped. */
export interface Committer {
  commit(build: Build, weight: Weight): Promise<Deno.KvCommitResult | Deno.KvCommitError>;
}

/** KV's bounds on one atomic commit (100 checks, 1000 mutations, about 800 KiB), with room to spare. */
const LIMITS: Weight = { checks: 100, mutations: 900, bytes: 640 * 1024 };

interface Waiting {
  build: Build;
  weight: Weight;
  resolve(result: Deno.KvCommitResult | Deno.KvCommitError): void;
  reject(err: unknown): void;
}

/** A committer over `kv`; commits in one at a time, each taking all that waits (within the bounds). */
export function groupCommitter(kv: Deno.Kv): Committer {
  const waiting: Waiting[] = [];
  let flushing = false;

  function take(): Waiting[] {
    const group: Waiting[] = [];
    const sum: Weight = { checks: 0, mutations: 0, bytes: 0 };
    while (waiting.length > 0) {
      const { weight } = waiting[0];
      const fits = sum.checks + weight.checks <= LIMITS.checks &&
        sum.mutations + weight.mutations <= LIMITS.mutations && sum.bytes + weight.bytes <= LIMITS.bytes;
      if (!fits && group.length > 0) break;
      group.push(waiting.shift()!);
      sum.checks += weight.checks;
      sum.mutations += weight.mutations;
      sum.bytes += weight.bytes;
    }
    return group;
  }

  async function alone(one: Waiting): Promise<void> {
    try {
      const op = kv.atomic();
      one.build(op);
      one.resolve(await op.commit());
    } catch (err) {
      one.reject(err);
    }
  }

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (waiting.length > 0) {
        const group = take();
        if (group.length === 1) {
          await alone(group[0]);
          continue;
        }
        const op = kv.atomic();
        for (const one of group) one.build(op);
        const result = await op.commit().catch(() => undefined);
        if (result?.ok) { for (const one of group) one.resolve(result); }
        else for (const one of group) await alone(one);
      }
    } finally {
      flushing = false;
    }
  }

  return {
    commit(build, weight) {
      const landed = new Promise<Deno.KvCommitResult | Deno.KvCommitError>((resolve, reject) => {
        waiting.push({ build, weight, resolve, reject });
      });
      if (!flushing) void flush();
      return landed;
    },
  };
}
