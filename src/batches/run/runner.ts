/**
 * @module The background loop that runs gateway-made batches: it finds the batches still running in KV, claims their
 * requests a few at a time (`batches.concurrency` per instance), serves each as its endpoint would while renewing its
 * lease, keeps each result under its claim, holds a token's requests back while its limits or budget have no room,
 * and ends a batch once every request has a result, or it was canceled or ran out of time and no request is held.
 */
import type { IdStore } from "../ids.ts";
import type { Deps } from "../../handlers/context.ts";
import { type Claim, claimRequest, commitResult, liveClaims, releaseClaim, renewClaim, unfinished } from "./claims.ts";
import { deletePrefix } from "./chunks.ts";
import { anthropicLine, openaiFile, openaiLine } from "./formats.ts";
import { resultBytes } from "./results.ts";
import type { Principal } from "../../core/principal.ts";
import type { PrincipalOf } from "./principal.ts";
import { countsOf, getRun, KEYS, readRequest, replaceRun, type RunBatch, type RunEnd } from "./records.ts";
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
      if (!(untried && running) && await settle(batch, got.versionstamp)) {
        queues.delete(id);
        continue;
      }
      if (batch.state !== "in_progress" || now >= batch.expires_at) continue;
      if ((heldUntil.get(batch.token_id) ?? 0) > now) continue;
      await fill(batch);
    }
  }

  /** Claims requests of `batch` for the free slots. */
  async function fill(batch: RunBatch): Promise<void> {
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
      const claim = await claimRequest(kv, {
        batch: batch.id,
        index,
        instance: d.instance,
        leaseMs: settings.leaseMs,
        now: d.now(),
      });
      if (claim) launch(batch, claim);
    }
  }

  function launch(batch: RunBatch, claim: Claim): void {
    const task: Promise<void> = runRequest(batch, claim)
      .catch((err) => {
        d.log({ level: "error", event: "batch_request_error", batch: batch.id, error: String(err) });
      })
      .finally(() => {
        tasks.delete(task);
        wake();
      });
    tasks.add(task);
  }

  /** Serves one claimed request and keeps its result; a request not kept is given back, to run again. */
  async function runRequest(batch: RunBatch, claim: Claim): Promise<void> {
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
      kept = await commitResult(kv, claim, {
        custom_id: request.custom_id,
        kind: served.status < 300 ? "succeeded" : "errored",
        line,
        expireIn: Math.max(1, batch.results_expire_at - d.now()),
      });
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

  /**
   * Ends `batch` when it is over: every request has its result, or it was canceled or ran out of time and no
   * instance holds one of its requests any more. True when it has ended (here or elsewhere).
   */
  async function settle(batch: RunBatch, versionstamp: string): Promise<boolean> {
    if (batch.state === "ended") return true;
    const now = d.now();
    const counts = await countsOf(kv, batch.id);
    const canceling = batch.state === "canceling";
    let end: RunEnd | undefined;
    if (counts.succeeded + counts.errored >= batch.total) end = canceling ? "canceled" : "completed";
    else if ((canceling || now >= batch.expires_at) && await liveClaims(kv, batch.id, now) === 0) {
      end = canceling ? "canceled" : "expired";
    }
    if (!end) return false;
    const ended: RunBatch = { ...batch, state: "ended", end, ended_at: now, counts };
    if (batch.protocol === "openai") {
      const unrun = end === "expired" && counts.succeeded + counts.errored < batch.total;
      // Named after the batch, so an instance that ends it at the same time registers the same files.
      const name = batch.id.slice(batch.id.indexOf("_") + 1);
      ended.files = {
        ...counts.succeeded > 0 ? { output: `file-${name}o` } : {},
        ...counts.errored > 0 || unrun ? { error: `file-${name}e` } : {},
      };
    }
    // Claims left behind by an instance that went would otherwise let a late result in after the end.
    await deletePrefix(kv, KEYS.claims(batch.id));
    // The files exist before the batch says it has ended: a client reads them as soon as it sees it.
    await registerFiles(ended);
    if (!await replaceRun(kv, ended, versionstamp, now)) return false;
    d.log({ event: "batch_ended", batch: batch.id, end, succeeded: counts.succeeded, errored: counts.errored });
    return true;
  }

  /** An ended OpenAI batch's output and error files, registered as its owner's. */
  async function registerFiles(batch: RunBatch): Promise<void> {
    const keepMs = Math.max(1, batch.results_expire_at - d.now());
    for (const [set, id] of Object.entries(batch.files ?? {}) as ["output" | "error", string][]) {
      await kv.set(KEYS.file(id), { batch: batch.id, set }, { expireIn: keepMs });
      await d.ids.put({
        kind: "file",
        protocol: "openai",
        id,
        owner: batch.token_id,
        upstream: null,
        upstream_id: null,
        created_at: batch.ended_at ?? d.now(),
        purpose: "batch_output",
        // Listings show the file as it is, without asking for it.
        object: openaiFile(id, batch, set, await resultBytes(kv, batch, set)),
      }, keepMs);
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
