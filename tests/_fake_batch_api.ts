/**
 * @module Fake Anthropic and OpenAI Files and batch APIs on 127.0.0.1 port 0, keeping files and batches per account
 * (per API key) as the real services do: another account's id is a 404, a batch advances only when the test calls
 * `advance()`, and its results are files in the real formats (Anthropic's results JSONL with an absolute
 * `results_url`; OpenAI's output and error files). Anthropic is under /anthropic/v1, OpenAI under /openai/v1.
 */
type Json = Record<string, unknown>;

/** A stored file of one account. */
interface StoredFile {
  meta: Json;
  content: Uint8Array<ArrayBuffer>;
}

/** A batch of one account, with its requests. */
interface StoredBatch {
  object: Json;
  requests: { custom_id: string; params: Json }[];
}

/** One account's files and batches. */
interface Account {
  files: Map<string, StoredFile>;
  batches: Map<string, StoredBatch>;
}

/** The fake, with what it saw. */
export interface FakeBatchApi extends AsyncDisposable {
  url: string;
  /** Every request: method, path (with query) and headers. */
  seen: { method: string; path: string; headers: Headers; body?: string }[];
  /** Moves every batch one step on: Anthropic's to ended, OpenAI's validating -> in_progress -> completed. */
  advance(): void;
  accounts: Map<string, Account>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const anthropicError = (status: number, type: string, message: string) =>
  Response.json({ type: "error", error: { type, message } }, { status });
const openaiError = (status: number, message: string, param: string | null = null) =>
  Response.json({ error: { message, type: "invalid_request_error", param, code: null } }, { status });

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
    if (!account) return openaiError(401, "Incorrect API key provided");
    return await openai(req, url.pathname.slice(prefix.length), url.searchParams, account);
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

  async function anthropic(req: Request, path: string, account: Account): Promise<Response> {
    const files = /^\/files(?:\/([^/]+))?(\/content)?$/.exec(path);
    if (files) {
      if (!/files-api-2025-04-14/.test(req.headers.get("anthropic-beta") ?? "")) {
        return anthropicError(400, "invalid_request_error", "The Files API needs the files-api-2025-04-14 beta");
      }
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

  async function openai(req: Request, path: string, query: URLSearchParams, account: Account): Promise<Response> {
    const files = /^\/files(?:\/([^/]+))?(\/content)?$/.exec(path);
    if (files) {
      const [, id, content] = files;
      if (!id && req.method === "POST") {
        const made = await upload(req, account, (file, form) => {
          const purpose = form.get("purpose");
          if (!["batch", "user_data", "vision", "assistants"].includes(String(purpose))) {
            return openaiError(400, "purpose: invalid", "purpose");
          }
          return {
            id: `file-${next()}`,
            object: "file",
            bytes: file.size,
            created_at: Math.floor(now() / 1000),
            filename: file.name,
            purpose,
            status: "processed",
          };
        });
        return made ?? openaiError(400, "file: required", "file");
      }
      if (!id) {
        const data = [...account.files.values()].map((file) => file.meta).reverse();
        return Response.json({ object: "list", data, has_more: false });
      }
      const file = account.files.get(id);
      if (!file) return openaiError(404, `No such File object: ${id}`, "id");
      if (content) return new Response(file.content, { headers: { "content-type": "application/octet-stream" } });
      if (req.method === "DELETE") {
        account.files.delete(id);
        return Response.json({ id, object: "file", deleted: true });
      }
      return Response.json(file.meta);
    }
    if (path === "/responses" && req.method === "POST") {
      const body = await req.json();
      for (const id of JSON.stringify(body.input).match(/file-\d+/g) ?? []) {
        if (!account.files.has(id)) return openaiError(404, `No such File object: ${id}`, "input");
      }
      return Response.json({
        id: `resp_${next()}`,
        object: "response",
        status: "completed",
        model: body.model,
        output: [],
      });
    }
    const batch = /^\/batches(?:\/([^/]+))?(\/cancel)?$/.exec(path);
    if (!batch) return openaiError(404, `no route ${path}`);
    const [, id, cancel] = batch;
    if (!id && req.method === "POST") {
      const body = await req.json();
      const input = account.files.get(body.input_file_id);
      if (!input) return openaiError(404, `No such File object: ${body.input_file_id}`, "input_file_id");
      const requests = new TextDecoder().decode(input.content).split("\n").filter((l) => l.trim()).map((l) =>
        JSON.parse(l)
      );
      const made = `batch_${next()}`;
      const object: Json = {
        id: made,
        object: "batch",
        endpoint: body.endpoint,
        input_file_id: body.input_file_id,
        completion_window: body.completion_window,
        status: "validating",
        output_file_id: null,
        error_file_id: null,
        created_at: Math.floor(now() / 1000),
        metadata: body.metadata ?? null,
        request_counts: { total: requests.length, completed: 0, failed: 0 },
      };
      account.batches.set(made, {
        object,
        requests: requests.map((r: Json) => ({ custom_id: String(r.custom_id), params: r.body as Json })),
      });
      return Response.json(object);
    }
    if (!id) {
      const data = [...account.batches.values()].map((b) => b.object).reverse();
      const limit = Number(query.get("limit") ?? 20);
      return Response.json({ object: "list", data: data.slice(0, limit), has_more: data.length > limit });
    }
    const stored = account.batches.get(id);
    if (!stored) return openaiError(404, `No batch found with id '${id}'.`);
    if (cancel) stored.object.status = "cancelling";
    return Response.json(stored.object);
  }

  function advanceOpenai(account: Account, stored: StoredBatch) {
    const { object } = stored;
    if (object.status === "validating") object.status = "in_progress";
    else if (object.status === "cancelling") object.status = "cancelled";
    else if (object.status === "in_progress") {
      const ok: string[] = [];
      const failed: string[] = [];
      for (const request of stored.requests) {
        const line = (status: number, body: Json) =>
          JSON.stringify({
            id: `batch_req_${next()}`,
            custom_id: request.custom_id,
            response: { status_code: status, request_id: `req_${next()}`, body },
            error: null,
          });
        if (request.custom_id.startsWith("fail")) {
          failed.push(line(400, { error: { message: "refused", type: "invalid_request_error" } }));
        } else ok.push(line(200, completion(String(request.params.model), `answer to ${request.custom_id}`)));
      }
      const put = (lines: string[], purpose: string) => {
        const fileId = `file-${next()}`;
        const content = new TextEncoder().encode(lines.map((l) => `${l}\n`).join(""));
        const meta = {
          id: fileId,
          object: "file",
          bytes: content.byteLength,
          created_at: 0,
          filename: `${object.id}_${purpose}.jsonl`,
          purpose,
        };
        account.files.set(fileId, { meta, content });
        return fileId;
      };
      object.output_file_id = ok.length ? put(ok, "batch_output") : null;
      object.error_file_id = failed.length ? put(failed, "batch_error") : null;
      object.request_counts = { total: stored.requests.length, completed: ok.length, failed: failed.length };
      object.status = "completed";
    }
  }

  return {
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
          } else advanceOpenai(account, stored);
        }
      }
    },
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
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

/** A chat completion from `model` saying `text`, with usage. */
function completion(model: string, text: string): Json {
  return {
    id: `chatcmpl-${crypto.randomUUID().slice(0, 8)}`,
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 },
  };
}
