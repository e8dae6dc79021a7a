/**
 * @module `serve --workers`: the count from the flag or the environment, and the supervisor's order (every worker's KV
 * open before the write permission goes and before any listens), its stop of all, and a failing worker ending it all.
 */
import assert from "node:assert/strict";
import {
  type FromSupervisor,
  spawnWorker,
  superviseWorkers,
  type ToSupervisor,
  workerCount,
  type WorkerEvents,
} from "../../src/serve/workers.ts";

const linux = { os: "linux", cores: 8 };
const env = (vars: Record<string, string>) => (name: string) => vars[name];

Deno.test("workerCount: 1 unless told, the flag over MODELGATE_WORKERS, auto for the cores", () => {
  assert.equal(workerCount(undefined, env({}), linux), 1);
  assert.equal(workerCount(undefined, env({ MODELGATE_WORKERS: "3" }), linux), 3);
  assert.equal(workerCount("2", env({ MODELGATE_WORKERS: "3" }), linux), 2);
  assert.equal(workerCount("auto", env({}), linux), 8);
  assert.equal(workerCount(undefined, env({ MODELGATE_WORKERS: "auto" }), { os: "linux", cores: 2 }), 2);
});

Deno.test("workerCount: a bad value, another platform or Deno Deploy is refused, naming where it came from", () => {
  for (const bad of ["0", "-1", "1.5", "two", "65"]) {
    assert.throws(() => workerCount(bad, env({}), linux), /^Error: --workers must be a whole number from 1 to 64/);
  }
  assert.throws(() => workerCount(undefined, env({ MODELGATE_WORKERS: "x" }), linux), /^Error: MODELGATE_WORKERS must/);
  assert.throws(() => workerCount("2", env({}), { os: "darwin", cores: 8 }), /only on Linux/);
  assert.equal(workerCount("1", env({}), { os: "darwin", cores: 8 }), 1);
  assert.throws(() => workerCount("2", env({ DENO_DEPLOYMENT_ID: "d1" }), linux), /Deno Deploy/);
});

/** Workers that record what the supervisor tells them and answer as the test makes them. */
function fakeWorkers() {
  const events: WorkerEvents[] = [];
  const got: { index: number; message: FromSupervisor }[] = [];
  const terminated: number[] = [];
  const steps: string[] = [];
  const spawned = Promise.withResolvers<void>();
  let stop: (() => void) | undefined;
  const say = (index: number, message: ToSupervisor) => events[index - 1].message(message);
  return {
    got,
    terminated,
    steps,
    say,
    crash: (index: number, reason: string) => events[index - 1].crash(reason),
    signal: () => stop!(),
    spawned: spawned.promise,
    io: (count: number) => ({
      err: (text: string) => steps.push(`err: ${text}`),
      spawn(index: number, on: WorkerEvents) {
        events.push(on);
        if (events.length === count) queueMicrotask(spawned.resolve);
        return {
          post(message: FromSupervisor) {
            got.push({ index, message });
            steps.push(`${message.type} ${index}${message.type === "listen" ? ` port=${message.port}` : ""}`);
          },
          terminate: () => terminated.push(index),
        };
      },
      onKvOpen: (needs?: { run?: boolean }) => steps.push(needs?.run ? "write dropped, run kept" : "write dropped"),
      onSignal(fn: () => void) {
        stop = fn;
        return () => steps.push("signals off");
      },
    }),
  };
}

/** Lets the supervisor's awaits run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Brings two fake workers up to listening on port 4321; with `run`, the workers start stdio MCP servers. */
async function upAndListening(fake: ReturnType<typeof fakeWorkers>, run = false): Promise<void> {
  await fake.spawned;
  fake.say(1, { type: "ready", needs: { run } });
  await settle();
  assert.ok(!fake.steps.includes("write dropped"), "the write permission stays until every worker has its KV open");
  fake.say(2, { type: "ready", needs: { run } });
  await settle();
  fake.say(1, { type: "listening", hostname: "127.0.0.1", port: 4321, source: "gw.yaml" });
  await settle();
  fake.say(2, { type: "listening", hostname: "127.0.0.1", port: 4321, source: "gw.yaml" });
  await settle();
}

Deno.test("superviseWorkers: workers that run stdio MCP servers keep the permission to start programs", async () => {
  const fake = fakeWorkers();
  const run = superviseWorkers(2, { config: "gw.yaml" }, fake.io(2));
  await upAndListening(fake, true);
  assert.ok(fake.steps.includes("write dropped, run kept"), fake.steps.join(", "));
  fake.signal();
  for (const index of [1, 2]) fake.say(index, { type: "done", code: 0 });
  assert.equal(await run, 0);
});

Deno.test("superviseWorkers: all open KV, then the write permission goes, then one listens and the rest on its port", async () => {
  const fake = fakeWorkers();
  const run = superviseWorkers(2, { config: "gw.yaml" }, fake.io(2));
  await upAndListening(fake);
  assert.deepEqual(fake.steps, [
    "start 1",
    "start 2",
    "write dropped",
    "listen 1 port=undefined",
    "listen 2 port=4321",
    "err: modelgate listening on http://127.0.0.1:4321 (config gw.yaml, 2 workers)",
  ]);
  const secrets = fake.got.filter(({ message }) => message.type === "start")
    .map(({ message }) => (message as { sealerSecret: Uint8Array }).sealerSecret);
  assert.equal(secrets[0], secrets[1], "every worker seals compaction items with one secret");
  fake.signal();
  assert.deepEqual(fake.steps.slice(-2), ["stop 1", "stop 2"], "SIGTERM reaches every worker");
  fake.say(1, { type: "done", code: 0 });
  fake.say(2, { type: "done", code: 0 });
  assert.equal(await run, 0);
  assert.deepEqual(fake.terminated, [1, 2]);
  assert.equal(fake.steps.at(-1), "signals off");
});

Deno.test("superviseWorkers: a worker that crashes while serving stops the others, and the gateway exits 1", async () => {
  const fake = fakeWorkers();
  const run = superviseWorkers(2, {}, fake.io(2));
  await upAndListening(fake);
  fake.crash(2, "Uncaught Error: boom");
  assert.deepEqual(fake.steps.slice(-2), [
    "err: modelgate worker 2 failed: Uncaught Error: boom; stopping the other workers, then the gateway (exit 1)",
    "stop 1",
  ]);
  fake.say(1, { type: "done", code: 0 });
  assert.equal(await run, 1);
  assert.deepEqual(fake.terminated, [2, 1]);
});

Deno.test("superviseWorkers: a start that fails prints its reason once, ends every worker and exits 1", async () => {
  const fake = fakeWorkers();
  const run = superviseWorkers(2, {}, fake.io(2));
  await fake.spawned;
  fake.say(1, { type: "failed", message: 'Cannot open KV "/x/y.kv": no folder' });
  fake.say(2, { type: "failed", message: 'Cannot open KV "/x/y.kv": no folder' });
  assert.equal(await run, 1);
  assert.deepEqual(fake.steps.filter((step) => step.startsWith("err")), ['err: Cannot open KV "/x/y.kv": no folder']);
  assert.ok(!fake.steps.includes("write dropped"));
  assert.deepEqual([...new Set(fake.terminated)].sort(), [1, 2]);
});

Deno.test("spawnWorker: an error nothing in a worker caught is reported as its crash, and the process goes on", async () => {
  const crashed = Promise.withResolvers<string>();
  // The runtime prints the worker's uncaught error whatever the supervisor does: its text says it is on purpose.
  const crash = 'throw new Error("a crash on purpose, as the spawnWorker test asks")';
  const module = new URL(`data:application/javascript,${encodeURIComponent(crash)}`);
  const handle = spawnWorker(1, { message() {}, crash: crashed.resolve }, module);
  assert.match(await crashed.promise, /a crash on purpose/);
  handle.terminate();
});
