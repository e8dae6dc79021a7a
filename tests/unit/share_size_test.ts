/** @module The size of a leased limit share, as a table: what a claim asks for and what it is granted. */
import assert from "node:assert/strict";
import { grantOf, wanted } from "../../src/access/share_size.ts";

const GRANTS: {
  name: string;
  value: bigint;
  limit: bigint;
  lacking: bigint;
  unit: bigint;
  want: bigint;
  grant: bigint | undefined;
}[] = [
  { name: "far from the limit, the want", value: 0n, limit: 1000n, lacking: 1n, unit: 1n, want: 5n, grant: 5n },
  { name: "a quarter of what is left at most", value: 0n, limit: 12n, lacking: 1n, unit: 1n, want: 5n, grant: 3n },
  { name: "near the limit, one request", value: 9n, limit: 12n, lacking: 1n, unit: 1n, want: 5n, grant: 1n },
  {
    name: "whole requests of the asking size",
    value: 0n,
    limit: 100n,
    lacking: 27n,
    unit: 27n,
    want: 135n,
    grant: 27n,
  },
  { name: "whole requests, several", value: 0n, limit: 1000n, lacking: 27n, unit: 27n, want: 135n, grant: 135n },
  {
    name: "a share holding part of a request asks only for the rest, and ends on whole requests",
    value: 0n,
    limit: 1000n,
    lacking: 8n,
    unit: 26n,
    want: 130n,
    grant: 112n,
  },
  {
    name: "a debt is asked for with the request",
    value: 78n,
    limit: 100n,
    lacking: 30n,
    unit: 26n,
    want: 130n,
    grant: undefined,
  },
  {
    name: "room for what is lacking though not for a whole request",
    value: 78n,
    limit: 100n,
    lacking: 8n,
    unit: 26n,
    want: 130n,
    grant: 8n,
  },
  {
    name: "an idle window admits one oversize request",
    value: 0n,
    limit: 100n,
    lacking: 5011n,
    unit: 5011n,
    want: 1n,
    grant: 5011n,
  },
  { name: "nothing lacking, nothing granted", value: 10n, limit: 100n, lacking: 0n, unit: 26n, want: 40n, grant: 0n },
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
