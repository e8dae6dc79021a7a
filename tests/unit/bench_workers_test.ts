/** @module The bench's workers section: its printed rows compare each worker count with one worker, per case. */
import assert from "node:assert/strict";
import { type Side, stat } from "../../bench/report.ts";
import { workersSeconds, workersTable } from "../../bench/workers.ts";

/** A side of runs at these requests/s and CPU per request (us), 2 ms p50 and 9 ms p99. */
function measured(rps: number[], cpuUs: number[]): Side {
  return { rps: stat(rps), p50Ms: stat([2]), p99Ms: stat([9]), cpuUsPerRequest: stat(cpuUs), errors: 0 };
}

Deno.test("workersTable: requests/s against 1 worker of the same case, CPU per request in ms, RSS in MB", () => {
  const rows = [
    {
      server: "gateway" as const,
      workers: 1,
      case: "messages",
      side: measured([4000, 4200], [200, 220]),
      peakRssBytes: 100 * 1024 * 1024,
    },
    {
      server: "gateway" as const,
      workers: 2,
      case: "messages",
      side: measured([6150], [240]),
      peakRssBytes: 150 * 1024 * 1024,
    },
  ];
  const lines = workersTable(rows);
  assert.match(lines[0], /^Workers: serve --workers N at c=64/);
  const [, one, two] = lines[1].split("\n").map((line) => line.trim().split(/\s+/));
  assert.deepEqual(one, ["messages", "gateway", "1", "4100", "1.00x", "0.210", "2.0", "9.0", "100", "MB", "0"]);
  assert.deepEqual(two, ["messages", "gateway", "2", "6150", "1.50x", "0.240", "2.0", "9.0", "150", "MB", "0"]);
  assert.deepEqual(workersTable([]), []);
});

Deno.test("workersSeconds: the floor and the gateway at two counts of two cases, each warmed up and repeated, within the bench's budget", () => {
  assert.equal(workersSeconds({ duration: 1, warmup: 1, repeats: 2 }), 2 * 2 * (2 * (1 + 2 * 1.3) + 10) + 10);
});
