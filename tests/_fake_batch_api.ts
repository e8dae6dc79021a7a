/**
 * @module Fake Anthropic and OpenAI Files and batch APIs on 127.0.0.1 port 0, keeping files and batches per account
 * (per API key) as the real services do: another account's id is a 404, a batch advances only when the test calls
 * `advance()`, and its results are files in the real formats (Anthropic's results JSONL with an absolute
 * `results_url`; OpenAI's output and error files). Anthropic is under /anthropic/v1, OpenAI under /openai/v1 (its half in
 * tests/_fake_batch_openai.ts), Azure OpenAI's v1 API under /azure/openai/v1 with its key as api-key.
 */
import {
  type Account,
  advanceOpenai,
  type FakeState,
  type Json,
  openai,
  type StoredBatch,
} from "./_fake_batch_openai.ts";

/** The fake, with what it saw. */
export interface FakeBatchApi extends AsyncDisposable {
  url: string;
  /** Every request: method, path (with query) and headers. */
  seen: { method: string; path: string; headers: Headers; body?: string }[];
  /** Moves every batch one step on: Anthropic's to ended, OpenAI's validating -> in_progress -> completed. */
  advance(): void;
  accounts: Map<string, Account>;
  /** How many of the next Anthropic results downloads answer 500, as a provider having a bad minute does. */
  failResults: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const anthropicError = (status: number, type: string, message: string) =>
  Response.json({ type: "error", error: { type, message } }, { status });

/** Starts the fake; `keys` maps each API key to its account name, `models` the upstream model ids it serves. */
export function fakeBatchApi(keys: Record<string, string>, models: readonly string[], now: () => number): FakeBatchApi {
  const accounts = new Map<string, Account>();
  const seen: FakeBatchApi["seen"] = [];
  let counter = 0;
  const next = () => String(++counter).padStart(6, "0");
  const accountOf = (key: string | null) => {
    const name = key === null ? undefined : keys[key];
    if (!name) return undefined;
    if (!accounts.has(name)) accounts.set(name, { files: new Map(), batches: new Map() });
    return accounts.get(name)!;
  };
  let base = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const copy = req.headers.get("content-type")?.startsWith("multipart/") ? undefined : await req.clone().text();
    seen.push({ method: req.method, path: url.pathname + url.search, headers: req.headers, body: copy });
    if (url.pathname.startsWith("/anthropic/v1/")) {
      const account = accountOf(req.headers.get("x-api-key"));
      if (!account) return anthropicError(401, "authentication_error", "invalid x-api-key");
      return await anthropic(req, url.pathname.slice("/anthropic/v1".length), account);
    }
    const prefix = url.pathname.startsWith("/openai/v1/") ? "/openai/v1" : "/azure/openai/v1";
    const key = prefix === "/openai/v1"
      ? req.headers.get("authorization")?.replace(/^Bearer /, "") ?? null
      : req.headers.get("api-key");
    const account = accountOf(key);
    if (!account) {
      const error = { message: "Incorrect API key provided", type: "invalid_request_error", param: null, code: null };
      return Response.json({ error }, { status: 401 });
    }
    return await openai(state, req, url.pathname.slice(prefix.length), url.searchParams, account);
  });
  base = `http://127.0.0.1:${server.addr.port}`;

  async function upload(req: Request, account: Account, meta: (file: File, form: FormData) => Json | Response) {
    const form = await req.formData().catch(() => undefined);
    const file = form?.get("file");
    if (!form || !(file instanceof File)) return undefined;
    const made = meta(file, form);
    if (made instanceof Response) return made;
    account.files.set(String(made.id), { meta: made, content: new Uint8Array(await file.arrayBuffer()) });
    return Response.json(made);
  }

  const state: FakeState = { next, now, upload };

  async function anthropic(req: Request, path: string, account: Account): Promise<Response> {
    const files = /^\/files(?:\/([^/]+))?(\/content)?$/.exec(path);
    if (files) {
      const [, id, content] = files;
      if (!id && req.method === "POST") {
        const made = await upload(req, account, (file) => ({
          id: `file_${next()}`,
          type: "file",
          filename: file.name,
          mime_type: file.type || "application/octet-stream",
          size_bytes: file.size,
          created_at: iso(now()),
          downloadable: false,
        }));
        return made ?? anthropicError(400, "invalid_request_error", "file: a file is required");
      }
      if (!id) {
        const data = [...account.files.values()].map((file) => file.meta).reverse();
        return Response.json({
          data,
          has_more: false,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
        });
      }
      const file = account.files.get(id);
      if (!file) return anthropicError(404, "not_found_error", `File not found: ${id}`);
      if (content) return anthropicError(400, "invalid_request_error", "This file is not downloadable");
      if (req.method === "DELETE") {
        account.files.delete(id);
        return Response.json({ id, type: "file_deleted" });
      }
      return Response.json(file.meta);
    }
    if (path === "/messages" && req.method === "POST") {
      const body = await req.json();
      const named = JSON.stringify(body.messages).match(/"file_id":"([^"]+)"/g) ?? [];
      for (const ref of named) {
        const id = ref.slice('"file_id":"'.length, -1);
        if (!account.files.has(id)) return anthropicError(404, "not_found_error", `File not found: ${id}`);
      }
      return Response.json(message(body.model, `read ${named.length} files`));
    }
    const batch = /^\/messages\/batches(?:\/([^/]+))?(\/cancel|\/results)?$/.exec(path);
    if (!batch) return anthropicError(404, "not_found_error", `no route ${path}`);
    const [, id, action] = batch;
    if (!id && req.method === "POST") {
      const body = await req.json();
      for (const [index, request] of (body.requests ?? []).entries()) {
        if (!models.includes(request.params?.model)) {
          return anthropicError(400, "invalid_request_error", `requests.${index}.params.model: unknown model`);
        }
      }
      const made = `msgbatch_${next()}`;
      const object = {
        id: made,
        type: "message_batch",
        processing_status: "in_progress",
        request_counts: { processing: body.requests.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
        ended_at: null,
        created_at: iso(now()),
        expires_at: iso(now() + 86_400_000),
        cancel_initiated_at: null,
        archived_at: null,
        results_url: null,
      };
      account.batches.set(made, { object, requests: body.requests });
      return Response.json(object);
    }
    if (!id) {
      const data = [...account.batches.values()].map((b) => b.object).reverse();
      return Response.json({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
    }
    const stored = account.batches.get(id);
    if (!stored) return anthropicError(404, "not_found_error", `Batch not found: ${id}`);
    const ended = stored.object.processing_status === "ended";
    if (action === "/cancel") {
      if (!ended) Object.assign(stored.object, { processing_status: "canceling", cancel_initiated_at: iso(now()) });
      return Response.json(stored.object);
    }
    if (action === "/results") {
      if (!ended) return anthropicError(400, "invalid_request_error", "Batch has not ended");
      if (api.failResults > 0) {
        api.failResults--;
        return anthropicError(500, "api_error", "Internal server error");
      }
      // A trailing blank line, as some JSONL writers leave: the gateway must not pass it on.
      const lines = stored.requests.map((r) => JSON.stringify(resultOf(stored, r))).join("\n");
      return new Response(`${lines}\n\n`, { headers: { "content-type": "application/binary" } });
    }
    if (req.method === "DELETE") {
      if (!ended) return anthropicError(400, "invalid_request_error", "Batch has not ended; cancel it first");
      account.batches.delete(id);
      return Response.json({ id, type: "message_batch_deleted" });
    }
    return Response.json(stored.object);
  }

  function resultOf(stored: StoredBatch, request: { custom_id: string; params: Json }) {
    if (stored.object.cancel_initiated_at) return { custom_id: request.custom_id, result: { type: "canceled" } };
    return {
      custom_id: request.custom_id,
      result: { type: "succeeded", message: message(request.params.model, `answer to ${request.custom_id}`) },
    };
  }

  const api: FakeBatchApi = {
    url: base,
    seen,
    accounts,
    advance() {
      for (const account of accounts.values()) {
        for (const stored of account.batches.values()) {
          const { object } = stored;
          if (object.type === "message_batch") {
            if (object.processing_status === "ended") continue;
            const canceled = object.processing_status === "canceling";
            const n = stored.requests.length;
            Object.assign(object, {
              processing_status: "ended",
              ended_at: iso(now()),
              request_counts: {
                processing: 0,
                succeeded: canceled ? 0 : n,
                errored: 0,
                canceled: canceled ? n : 0,
                expired: 0,
              },
              results_url: `${base}/anthropic/v1/messages/batches/${object.id}/results`,
            });
          } else advanceOpenai(state, account, stored);
        }
      }
    },
    failResults: 0,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
  return api;
}

/** An Anthropic message from `model` saying `text`, with usage. */
function message(model: unknown, text: string): Json {
  return {
    id: `msg_${crypto.randomUUID().slice(0, 8)}`,
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 1000, output_tokens: 500 },
  };
}
