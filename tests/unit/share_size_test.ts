/** @module The size of a leased limit share, as a table: what a claim asks for and what it is granted. */
import assert from "node:assert/strict";
import { grantOf, wanted } from "../../src/access/share_size.ts";

const GRANTS: { name: string; value: bigint; limit: bigint; first: bigint; want: bigint; grant: bigint }[] = [
  { name: "far from the limit, the want", value: 0n, limit: 1000n, first: 1n, want: 5n, grant: 5n },
  { name: "a quarter of what is left at most", value: 0n, limit: 12n, first: 1n, want: 5n, grant: 3n },
  { name: "near the limit, one request", value: 9n, limit: 12n, first: 1n, want: 5n, grant: 1n },
  { name: "whole requests of the asking size", value: 0n, limit: 100n, first: 27n, want: 135n, grant: 27n },
  { name: "whole requests, several", value: 0n, limit: 1000n, first: 27n, want: 135n, grant: 135n },
  { name: "an idle window admits one oversize request", value: 0n, limit: 100n, first: 5011n, want: 1n, grant: 5011n },
  {
    name: "a request that takes nothing gets the fair part",
    value: 10n,
    limit: 100n,
    first: 0n,
    want: 40n,
    grant: 22n,
  },
];

for (const c of GRANTS) {
  Deno.test(`grantOf(): ${c.name}`, () => {
    assert.equal(grantOf({ ...c, fairShare: 4 }), c.grant);
  });
}

Deno.test("wanted(): a first claim is the horizon in requests of its size; later ones follow the recent rate", () => {
  assert.equal(wanted(2n, 0n, 0, 1_000, 5_000), 10n);
  // 30 taken over 3 s is 10 a second: 50 over a 5 s horizon.
  assert.equal(wanted(1n, 30n, 1_000, 4_000, 5_000), 50n);
  // Under a second counts as a second, so a burst right after a claim does not ask for the window.
  assert.equal(wanted(1n, 30n, 1_000, 1_010, 5_000), 150n);
  assert.equal(wanted(200n, 30n, 1_000, 4_000, 5_000), 200n, "never less than what waits");
});
