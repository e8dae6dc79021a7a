/**
 * @module The order in which a request tries the upstreams serving its model: higher `priority` first, and
 * within one priority a weighted random order, so load spreads by `weight` and failover stays in the tier first;
 * a session's pinned deployment leads its own tier.
 */

/** What ordering needs to know of a candidate. */
export interface Weighted {
  priority: number;
  weight: number;
}

/** Returns `candidates` in try order; `random` returns a number in [0, 1) and is injected for tests. */
export function orderCandidates<T extends Weighted>(candidates: readonly T[], random: () => number): T[] {
  const tiers = new Map<number, T[]>();
  for (const candidate of candidates) {
    const tier = tiers.get(candidate.priority);
    if (tier) tier.push(candidate);
    else tiers.set(candidate.priority, [candidate]);
  }
  const out: T[] = [];
  for (const priority of [...tiers.keys()].sort((a, b) => b - a)) {
    const pool = [...tiers.get(priority)!];
    while (pool.length > 0) {
      // Weighted draw without replacement.
      let pick = random() * pool.reduce((sum, c) => sum + c.weight, 0);
      let index = 0;
      while (index < pool.length - 1 && (pick -= pool[index].weight) >= 0) index++;
      out.push(pool.splice(index, 1)[0]);
    }
  }
  return out;
}

/** True when some priority holds more than one candidate: only then is there a choice for a session pin to make. */
export function sharesTier(candidates: readonly Weighted[]): boolean {
  const seen = new Set<number>();
  for (const { priority } of candidates) {
    if (seen.has(priority)) return true;
    seen.add(priority);
  }
  return false;
}

/**
 * `ordered` (in try order) with the first candidate `pinned` accepts moved to the front of its own priority tier: a
 * session goes back to its deployment before the others of that tier, and never before a higher tier.
 */
export function leadWith<T extends Weighted>(ordered: readonly T[], pinned: (candidate: T) => boolean): T[] {
  const at = ordered.findIndex(pinned);
  if (at === -1) return [...ordered];
  const tierStart = ordered.findIndex((candidate) => candidate.priority === ordered[at].priority);
  const out = [...ordered];
  out.splice(tierStart, 0, ...out.splice(at, 1));
  return out;
}
