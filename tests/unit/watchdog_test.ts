/** Tests for the shared watchdog: one timer runs every watched check while anything is watched, and stops after. */
import assert from "node:assert/strict";
import { createWatchdog, tickFor, type Watched } from "../../src/core/watchdog.ts";

const TICKS = [
  { name: "a tenth of the shortest limit", limits: [300_000, 15_000, 500], want: 50 },
  { name: "at most a second", limits: [600_000, 1_800_000], want: 1000 },
  { name: "at least 5 ms", limits: [20, 150], want: 5 },
];
for (const c of TICKS) Deno.test(`tickFor() is ${c.name}`, () => assert.equal(tickFor(c.limits), c.want));

Deno.test("createWatchdog() runs every watched check on each tick until it is unwatched", async () => {
  const watchdog = createWatchdog({ tickMs: 5, now: Date.now });
  const seen: string[] = [];
  const { promise: twice, resolve } = Promise.withResolvers<void>();
  let ticks = 0;
  const a: Watched = {
    check(now) {
      assert.equal(typeof now, "number");
      seen.push("a");
      if (++ticks === 2) resolve();
    },
  };
  const b: Watched = {
    check() {
      seen.push("b");
      // An item may stop being watched from its own check.
      watchdog.unwatch(b);
    },
  };
  watchdog.watch(a);
  watchdog.watch(b);
  await twice;
  watchdog.unwatch(a);
  // The first tick saw both, the second only a; with nothing watched the timer is gone (the test would leak it).
  assert.deepEqual(seen, ["a", "b", "a"]);
});

Deno.test("createWatchdog() ignores unwatching what it does not watch", () => {
  const watchdog = createWatchdog({ tickMs: 5, now: Date.now });
  const item: Watched = { check() {} };
  watchdog.unwatch(item);
  watchdog.watch(item);
  watchdog.unwatch({ check() {} });
  watchdog.unwatch(item);
  assert.equal(watchdog.now() > 0, true);
});
