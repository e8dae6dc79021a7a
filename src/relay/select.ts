/**
 * @module The order in which a request tries the upstreams serving its model: higher `priority` first, and
 * within one priority a weighted random order, so load spreads by `weight` and failover stays in the tier first.
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
