/**
 * @module The background loop that runs gateway-made batches: it finds the batches still running in KV, claims their
 * requests a few at a time (`batches.concurrency` per instance), serves each as its endpoint would while renewing its
 * lease, keeps each result under its claim, holds a token's requests back while its limits or budget have no room,
 * and ends a batch once every request has a result, or it was canceled or ran out of time and no request is held.
 */
import type { IdStore } from "../ids.ts";
import type { Deps } from "../../handlers/context.ts";
import {
  type Claim,
  type ClaimAt,
  claimRequest,
  commitAndClaim,
  releaseClaim,
  renewClaim,
  unfinished,
} from "./claims.ts";
import { groupCommitter } from "./committer.ts";
import { anthropicLine, openaiLine } from "./formats.ts";
import type { Principal } from "../../core/principal.ts";
import type { PrincipalOf } from "./principal.ts";
import { getRun, readRequest, type RunBatch } from "./records.ts";
import { settleBatch } from "./ending.ts";
import { BATCH_ROUTES, serveOne } from "./serve_one.ts";

/** How the runner works, from `batches` in the config. */
export interface RunnerSettings {
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  /** How long a token looked up stays trusted, as the token cache's refresh (`usage.auth_refresh_ms`). */
  authRefreshMs: number;
}

/** What the runner depends on. */
export interface RunnerDeps {
  kv: Deno.Kv;
  /** The app's dependencies: each request is served through them, as a request to its endpoint is. */
  app: Deps;
  principalOf: PrincipalOf;
  ids: IdStore;
  /** This instance's name in its claims. */
  instance: string;
  settings: RunnerSettings;
  now(): number;
  log(line: Record<string, unknown>): void;
}

/** The running loop. */
export interface BatchRunner {
  /** Looks for work now (a batch was made or canceled). */
  wake(): void;
  /**
   * Stops claiming and lets the requests under way finish for up to `graceMs`; those still running then are cut and
   * their claims given back, so they run again (here after a restart, or on another instance). Idempotent.
   */
  stop(graceMs?: number): Promise<void>;
  /** Requests this instance runs now. */
  running(): number;
}

/** A slot's last look at its batch's record: its claims are checked against it. */
interface Seen {
  versionstamp: string;
}

/** Where the runner is in one batch: the next index never tried here, and the unfinished ones to try again. */
interface Queue {
  next: number;
  again: number[];
  scannedAt: number;
}

/** Starts the loop; it runs until {@linkcode BatchRunner.stop}. */
export function startBatchRunner(d: RunnerDeps): BatchRunner {
  const { kv, settings } = d;
  const tasks = new Set<Promise<void>>();
  // The slots' results land together, as many as wait while a commit is under way.
  const committer = groupCommitter(kv);
  const ending = { kv, ids: d.ids, now: d.now, log: d.log };
  // Each running request's cut, for the end of a stop's grace.
  const cuts = new Set<AbortController>();
  const queues = new Map<string, Queue>();
  // A token whose limits refused a request is not tried again before they have room.
  const heldUntil = new Map<string, number>();
  // A batch's token as last looked up, for as long as a request with it trusts the token cache (auth_refresh_ms).
  const callers = new Map<string, { at: number; principal: Promise<Principal> }>();
  const principalOf = (tokenId: string): Promise<Principal> => {
    const known = callers.get(tokenId);
    if (known && d.now() - known.at < settings.authRefreshMs) return known.principal;
    const principal = d.principalOf(tokenId);
    callers.set(tokenId, { at: d.now(), principal });
    return principal;
  };
  let stopped = false;
  let woken = Promise.withResolvers<void>();
  const wake = () => woken.resolve();

  async function loop(): Promise<void> {
    while (!stopped) {
      try {
        await pass();
      } catch (err) {
        d.log({ level: "error", event: "batch_runner_error", error: String((err as Error)?.stack ?? err) });
      }
      if (stopped) break;
      const timer = setTimeout(wake, settings.pollMs);
      await woken.promise;
      clearTimeout(timer);
      woken = Promise.withResolvers<void>();
    }
    await Promise.allSettled([...tasks]);
  }

  /** One look at every running batch: end those that are over, claim work for the free slots. */
  async function pass(): Promise<void> {
    for await (const entry of kv.list<true>({ prefix: ["gbatch_active"] })) {
      if (stopped || tasks.size >= settings.concurrency) return;
      const id = entry.key[1] as string;
      const got = await getRun(kv, id, d.now());
      if (!got) {
        await kv.delete(entry.key);
        queues.delete(id);
        continue;
      }
      const { batch } = got;
      const now = d.now();
      // A running batch with requests never tried here is not over: its counts need no look yet.
      const untried = (queues.get(id)?.next ?? 0) < batch.total;
      const running = batch.state === "in_progress" && now < batch.expires_at;
      if (!(untried && running) && await settleBatch(ending, batch, got.versionstamp)) {
        queues.delete(id);
        continue;
      }
      if (batch.state !== "in_progress" || now >= batch.expires_at) continue;
      if ((heldUntil.get(batch.token_id) ?? 0) > now) continue;
      await fill(batch, got.versionstamp);
    }
  }

  /** Claims requests of `batch` for the free slots. */
  async function fill(batch: RunBatch, versionstamp: string): Promise<void> {
    const queue = queues.get(batch.id) ?? { next: 0, again: [], scannedAt: -Infinity };
    queues.set(batch.id, queue);
    while (!stopped && tasks.size < settings.concurrency) {
      let index: number | undefined = queue.next < batch.total ? queue.next++ : queue.again.shift();
      // Past its last request, the batch is looked over again now and then for requests whose instance has gone.
      if (index === undefined && d.now() - queue.scannedAt >= settings.leaseMs / 2) {
        queue.scannedAt = d.now();
        queue.again = await unfinished(kv, batch.id, batch.total);
        index = queue.again.shift();
      }
      if (index === undefined) return;
      const claim = await claim1(batch, index);
      if (claim) launch(batch, claim, versionstamp);
    }
  }

  function claimAt(batch: RunBatch, index: number): ClaimAt {
    return { batch: batch.id, index, instance: d.instance, leaseMs: settings.leaseMs, now: d.now() };
  }

  function claim1(batch: RunBatch, index: number): Promise<Claim | undefined> {
    return claimRequest(kv, claimAt(batch, index));
  }

  /**
   * The next request of `batch` never tried here, claimed, for a slot that has just finished one: slots go on with
   * their batch by themselves, so claiming is not one loop's work. Undefined when the batch is the loop's to look at
   * (it was canceled, it is out of time, its token is held back, or it has no untried request left).
   */
  async function claimNext(batch: RunBatch, seen: Seen): Promise<Claim | undefined> {
    for (
      let index = await pickNext(batch, seen, true);
      index !== undefined;
      index = await pickNext(batch, seen, true)
    ) {
      const claim = await claim1(batch, index);
      if (claim) return claim;
    }
    return undefined;
  }

  /**
   * The next untried index of `batch` for a slot to go on with, while the batch runs and its token is not held. With
   * `look`, the batch's record is read again first (a cancel made on any instance is seen); without, the claim that
   * takes the index is checked against the record as `seen`.
   */
  async function pickNext(batch: RunBatch, seen: Seen, look: boolean): Promise<number | undefined> {
    const queue = queues.get(batch.id);
    if (!queue || queue.next >= batch.total || stopped) return undefined;
    const now = d.now();
    if (now >= batch.expires_at || (heldUntil.get(batch.token_id) ?? 0) > now) return undefined;
    if (look) {
      const got = await getRun(kv, batch.id, now);
      if (got?.batch.state !== "in_progress") return undefined;
      seen.versionstamp = got.versionstamp;
    }
    return queue.next++;
  }

  function launch(batch: RunBatch, first: Claim, versionstamp: string): void {
    const seen: Seen = { versionstamp };
    const task: Promise<void> = (async () => {
      for (let claim: Claim | undefined = first; claim;) {
        claim = await runRequest(batch, claim, seen) ?? await claimNext(batch, seen);
      }
    })()
      .catch((err) => {
        d.log({ level: "error", event: "batch_request_error", batch: batch.id, error: String(err) });
      })
      .finally(() => {
        tasks.delete(task);
        wake();
      });
    tasks.add(task);
  }

  /**
   * Serves one claimed request and keeps its result, claiming the slot's next request in the same commit; a request
   * not kept is given back, to run again. The next request's claim, when it was made.
   */
  async function runRequest(batch: RunBatch, claim: Claim, seen: Seen): Promise<Claim | undefined> {
    const lost = new AbortController();
    cuts.add(lost);
    const renew = setInterval(() => {
      renewClaim(kv, claim, settings.leaseMs, d.now()).then((held) => held || lost.abort(), () => {});
    }, Math.max(100, Math.floor(settings.leaseMs / 3)));
    let kept = false;
    try {
      const request = await readRequest(kv, batch.id, claim.index);
      if (!request) return;
      const requestId = `${batch.id}_${claim.index}`;
      const served = await serveOne({
        deps: d.app,
        principal: () => principalOf(batch.token_id),
        endpoint: batch.endpoint,
        route: BATCH_ROUTES[batch.protocol],
        body: request.body,
        requestId,
        signal: lost.signal,
      });
      if (served.kind === "held") {
        heldUntil.set(batch.token_id, d.now() + served.retryAfterMs);
        return;
      }
      // A request cut by the gateway's own stop, or whose claim another instance took, runs again: it is not kept.
      if (lost.signal.aborted || d.app.closing?.aborted) return;
      const line = batch.protocol === "anthropic"
        ? anthropicLine(request.custom_id, served.status, served.body)
        : openaiLine(request.custom_id, served.status, served.body, requestId);
      const index = await pickNext(batch, seen, false);
      const next = index === undefined ? undefined : { ...claimAt(batch, index), batchVersionstamp: seen.versionstamp };
      const landed = await commitAndClaim(
        kv,
        claim,
        {
          custom_id: request.custom_id,
          kind: served.status < 300 ? "succeeded" : "errored",
          line,
          expireIn: Math.max(1, batch.results_expire_at - d.now()),
        },
        next,
        committer,
      );
      kept = landed.kept;
      // An index taken but not claimed goes back to the queue, to be looked at again.
      if (index !== undefined && !landed.next) queues.get(batch.id)?.again.push(index);
      return landed.next;
    } finally {
      clearInterval(renew);
      cuts.delete(lost);
      if (!kept) {
        await releaseClaim(kv, claim).catch(() => {});
        // Given back (held by limits, or cut), it is this instance's to try again first.
        queues.get(batch.id)?.again.push(claim.index);
      }
    }
  }

  const running = loop();
  let stopping: Promise<void> | undefined;
  return {
    wake,
    running: () => tasks.size,
    stop(graceMs = 0) {
      if (stopping) return stopping;
      stopped = true;
      wake();
      const cut = setTimeout(() => {
        for (const controller of cuts) controller.abort();
      }, graceMs);
      return stopping = running.finally(() => clearTimeout(cut));
    },
  };
}
