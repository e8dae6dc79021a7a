/**
 * @module The batches the gateway runs itself, behind the batch routes (see core/batch_contract.ts): a checked
 * batch is kept in KV and handed to the runner; retrieve, cancel, results, delete and the output files answer in the
 * protocol the batch was made in.
 */
import type { GatewayBatchCreate, GatewayBatchRunner, IdRecord } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import type { JsonObject } from "../core/types.ts";
import { type IdStore, newId } from "./ids.ts";
import { anthropicBatch, openaiBatch, openaiFile } from "./run/formats.ts";
import {
  countsOf,
  createRun,
  deleteRun,
  getRun,
  KEYS,
  replaceRun,
  RUN_ENDPOINTS,
  type RunBatch,
  type RunEndpoint,
} from "./run/records.ts";
import { resultBytes, resultStream } from "./run/results.ts";

const DAY_MS = 86_400_000;
/** Both providers give a batch 24 hours; requests not run by then expire. */
export const WINDOW_MS = DAY_MS;
/** How long results are kept: Anthropic's 29 days, OpenAI's batch files' 30. */
export const KEEP_MS = { anthropic: 29 * DAY_MS, openai: 30 * DAY_MS } as const;

/** What the gateway-run batches need. */
export interface GatewayRunDeps {
  kv: Deno.Kv;
  ids: IdStore;
  now(): Date;
  /** Tells the runner there is work (a new batch, a cancel). */
  wake(): void;
}

/** The batches the gateway runs, over KV. */
export function gatewayBatches(d: GatewayRunDeps): GatewayBatchRunner {
  const { kv } = d;

  /** The batch an id record names, or the provider's 404 when it is gone. */
  async function batchOf(record: IdRecord): Promise<{ batch: RunBatch; versionstamp: string }> {
    const got = await getRun(kv, record.id, d.now().getTime());
    if (!got || got.batch.token_id !== record.owner) throw notFound(record);
    return got;
  }

  async function shape(batch: RunBatch, baseUrl: string): Promise<JsonObject> {
    const counts = batch.counts ?? await countsOf(kv, batch.id);
    return batch.protocol === "anthropic" ? anthropicBatch(batch, counts, baseUrl) : openaiBatch(batch, counts);
  }

  return {
    async create(input: GatewayBatchCreate) {
      const endpoint = input.requests[0]?.endpoint;
      if (!RUN_ENDPOINTS.includes(endpoint as RunEndpoint)) {
        throw new GatewayError("invalid_request", `Endpoint ${endpoint} is not served in batches the gateway runs`, {
          param: "endpoint",
        });
      }
      const now = d.now();
      const id = newId(input.protocol === "anthropic" ? "msgbatch_" : "batch_", now);
      const keepMs = KEEP_MS[input.protocol];
      const { token, group } = input.caller;
      const batch = await createRun(kv, {
        id,
        protocol: input.protocol,
        endpoint: endpoint as RunEndpoint,
        token_id: token.id,
        requests: input.requests.map(({ custom_id, body }) => ({ custom_id, body: body as JsonObject })),
        now: now.getTime(),
        windowMs: WINDOW_MS,
        keepMs,
        ...input.openai ? { extra: { ...input.openai } } : {},
      });
      await d.ids.put({
        kind: "batch",
        protocol: input.protocol,
        id,
        owner: token.id,
        upstream: null,
        upstream_id: null,
        created_at: batch.created_at,
        models: batch.models,
        ...token.owner ? { owner_email: token.owner } : {},
        group: group.name,
      }, keepMs);
      d.wake();
      return await shape(batch, "");
    },

    async retrieve(record, baseUrl) {
      return await shape((await batchOf(record)).batch, baseUrl);
    },

    async cancel(record, baseUrl) {
      for (let attempt = 0; attempt < 5; attempt++) {
        const { batch, versionstamp } = await batchOf(record);
        if (batch.state !== "in_progress") return await shape(batch, baseUrl);
        const now = d.now().getTime();
        const canceling: RunBatch = { ...batch, state: "canceling", cancel_requested_at: now };
        if (await replaceRun(kv, canceling, versionstamp, now)) {
          d.wake();
          return await shape(canceling, baseUrl);
        }
      }
      throw new GatewayError("unavailable", "The batch kept changing; try the cancel again", {
        headers: { "retry-after": "1" },
      });
    },

    async results(record) {
      if (record.kind === "file") {
        const file = await fileOf(record);
        return resultStream(kv, file.batch, file.set);
      }
      const { batch } = await batchOf(record);
      if (batch.state !== "ended") throw notEnded(batch);
      return resultStream(kv, batch, batch.protocol === "anthropic" ? "anthropic" : "output");
    },

    async delete(record) {
      const { batch } = await batchOf(record);
      if (batch.state !== "ended") {
        throw new GatewayError(
          "invalid_request",
          `Batch ${batch.id} cannot be deleted while it is ${batch.state}; cancel it first`,
        );
      }
      await deleteRun(kv, batch);
      await d.ids.remove(record);
      return { id: batch.id, type: "message_batch_deleted" };
    },

    async file(record) {
      const { batch, set } = await fileOf(record);
      return openaiFile(record.id, batch, set, await resultBytes(kv, batch, set));
    },
  };

  /** The batch and the set of its lines an output or error file id stands for. */
  async function fileOf(record: IdRecord): Promise<{ batch: RunBatch; set: "output" | "error" }> {
    const entry = (await kv.get<{ batch: string; set: "output" | "error" }>(KEYS.file(record.id))).value;
    const got = entry && await getRun(kv, entry.batch, d.now().getTime());
    if (!entry || !got || got.batch.token_id !== record.owner) throw notFound(record);
    return { batch: got.batch, set: entry.set };
  }
}

/** The 404 the provider gives for an id it does not know. */
function notFound(record: IdRecord): GatewayError {
  const what = record.kind === "file" ? "File" : "Batch";
  return new GatewayError("not_found", `${what} ${record.id} not found`, { code: "not_found" });
}

/** Results asked for before the batch ended: a 409, as a native batch's are answered. */
function notEnded(batch: RunBatch): GatewayError {
  return new GatewayError(
    "invalid_request",
    `Batch ${batch.id} is still ${batch.state}; its results are ready once processing_status is ended`,
    { status: 409 },
  );
}
