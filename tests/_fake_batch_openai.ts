/**
 * @module The OpenAI half of the fake Files and batch APIs (tests/_fake_batch_api.ts): files with purposes, batches
 * made from an account's input file and advanced validating -> in_progress -> completed (or cancelling -> cancelled),
 * output and error files in OpenAI's line format (a custom_id starting with "fail" fails), and Responses calls that
 * check the files they name.
 */

/** JSON as the fake reads and writes it. */
export type Json = Record<string, unknown>;

/** A stored file of one account. */
export interface StoredFile {
  meta: Json;
  content: Uint8Array<ArrayBuffer>;
}

/** A batch of one account, with its requests. */
export interface StoredBatch {
  object: Json;
  requests: { custom_id: string; params: Json }[];
}

/** One account's files and batches. */
export interface Account {
  files: Map<string, StoredFile>;
  batches: Map<string, StoredBatch>;
}

/** What the OpenAI half shares with the fake around it. */
export interface FakeState {
  next(): string;
  now(): number;
  /** Stores a multipart upload's file under the metadata `meta` makes; undefined without a file. */
  upload(
    req: Request,
    account: Account,
    meta: (file: File, form: FormData) => Json | Response,
  ): Promise<Response | undefined>;
}

const openaiError = (status: number, message: string, param: string | null = null) =>
  Response.json({ error: { message, type: "invalid_request_error", param, code: null } }, { status });

/** Answers one OpenAI request of `account`; `path` is under /v1. */
export async function openai(
  state: FakeState,
  req: Request,
  path: string,
  query: URLSearchParams,
  account: Account,
): Promise<Response> {
  const files = /^\/files(?:\/([^/]+))?(\/content)?$/.exec(path);
  if (files) {
    const [, id, content] = files;
    if (!id && req.method === "POST") {
      const made = await state.upload(req, account, (file, form) => {
        const purpose = form.get("purpose");
        if (!["batch", "user_data", "vision", "assistants"].includes(String(purpose))) {
          return openaiError(400, "purpose: invalid", "purpose");
        }
        return {
          id: `file-${state.next()}`,
          object: "file",
          bytes: file.size,
          created_at: Math.floor(state.now() / 1000),
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
      id: `resp_${state.next()}`,
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
    const made = `batch_${state.next()}`;
    const object: Json = {
      id: made,
      object: "batch",
      endpoint: body.endpoint,
      input_file_id: body.input_file_id,
      completion_window: body.completion_window,
      status: "validating",
      output_file_id: null,
      error_file_id: null,
      created_at: Math.floor(state.now() / 1000),
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

/** Moves one OpenAI batch a step on. */
export function advanceOpenai(state: FakeState, account: Account, stored: StoredBatch) {
  const { object } = stored;
  if (object.status === "validating") object.status = "in_progress";
  else if (object.status === "cancelling") object.status = "cancelled";
  else if (object.status === "in_progress") {
    const ok: string[] = [];
    const failed: string[] = [];
    for (const request of stored.requests) {
      const line = (status: number, body: Json) =>
        JSON.stringify({
          id: `batch_req_${state.next()}`,
          custom_id: request.custom_id,
          response: { status_code: status, request_id: `req_${state.next()}`, body },
          error: null,
        });
      if (request.custom_id.startsWith("fail")) {
        failed.push(line(400, { error: { message: "refused", type: "invalid_request_error" } }));
      } else ok.push(line(200, completion(String(request.params.model), `answer to ${request.custom_id}`)));
    }
    const put = (lines: string[], purpose: string) => {
      const fileId = `file-${state.next()}`;
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
