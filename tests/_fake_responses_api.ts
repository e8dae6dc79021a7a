/**
 * @module A fake of OpenAI's Responses API (and of Azure OpenAI's v1 API, which has the same shape) behind the fake
 * upstream, checking what the real one checks: its own credential; `previous_response_id` only for responses it
 * stored; reasoning and compaction items only when it made them (their `encrypted_content` is sealed with the
 * deployment's own secret, so a changed or foreign one is its 400 `invalid_encrypted_content`, and a reasoning item
 * without content must name one it stored); Chat Completions refused for Responses-only models (OpenAI's 404, or
 * Azure's 400 `OperationNotSupported`). Its model follows a script (tests/_scripted_model.ts): each turn is the next
 * step, by how many tool outputs the input holds, with a reasoning item first when the request asks for reasoning.
 */
import type { FakeUpstream, Responder, SeenRequest } from "./_fake_upstream.ts";
import { sse, type Step } from "./_scripted_model.ts";
import { isOutput, itemsOf, responsesAnswer, seal, unseal } from "./_fake_responses_events.ts";
import type { Json } from "./_responses.ts";

export type { Json };

/** How one fake deployment behaves. */
export interface ResponsesApiOptions {
  /** Seals its reasoning and compaction items: two deployments with the same secret read each other's (one account). */
  secret: string;
  /** Says whether a request's headers carry this deployment's credential. */
  authorized(headers: Headers): boolean;
  /** The models it serves only through /responses. */
  responsesOnly?: string[];
  /**
   * Refusals as Azure words them instead of as OpenAI does: a refused credential's 401 with code "401", and Chat
   * Completions' 400 OperationNotSupported instead of a 404.
   */
  azure?: boolean;
  script?: Step[];
}

/** What a deployment saw, for assertions. */
export interface ResponsesApiState {
  /** Reasoning items it verified (its own `encrypted_content`, or an id it stored), per request in order. */
  verified: number[];
  /** Compaction items it opened, per request in order. */
  compactions: number[];
  /** Responses it stored (`store` not false), by id. */
  stored: Map<string, Json>;
}

/** An OpenAI-shaped error answer. */
function openaiError(status: number, message: string, code: string | null, param: string | null = null) {
  return Response.json({ error: { message, type: "invalid_request_error", param, code } }, { status });
}

/** An Azure-shaped error answer. */
function azureError(status: number, code: string, message: string) {
  return Response.json({ error: { code, message } }, { status });
}

/** Checks the input's reasoning and compaction items; an error answer for the first it cannot read. */
function checkItems(body: Json, options: ResponsesApiOptions, state: ResponsesApiState): Response | undefined {
  let verified = 0;
  let compactions = 0;
  for (const item of itemsOf(body.input)) {
    if (item.type === "reasoning") {
      if (item.encrypted_content !== undefined && item.encrypted_content !== null) {
        const opened = unseal(options.secret, item.encrypted_content);
        if (!opened || opened.id !== item.id) {
          return openaiError(
            400,
            `The encrypted content for item ${item.id} could not be verified. Reason: Encrypted content could not be ` +
              "decrypted or parsed.",
            "invalid_encrypted_content",
          );
        }
      } else if (![...state.stored.values()].some((r) => r.output.some((o: Json) => o.id === item.id))) {
        return openaiError(
          404,
          `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again ` +
            "with `store` set to true, or remove this item from your input.",
          null,
          "input",
        );
      }
      verified++;
    } else if (item.type === "compaction") {
      if (!unseal(options.secret, item.encrypted_content)) {
        return openaiError(
          400,
          `The encrypted content for item ${item.id} could not be verified.`,
          "invalid_encrypted_content",
        );
      }
      compactions++;
    } else if (item.type === "item_reference") {
      return openaiError(404, `Item with id '${item.id}' not found.`, null, "input");
    }
  }
  state.verified.push(verified);
  state.compactions.push(compactions);
  return undefined;
}

/** The refusal of a credential the deployment does not take, as each provider words it. */
function unauthorized(azure: boolean | undefined): Response {
  if (azure) {
    return azureError(
      401,
      "401",
      "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an " +
        "active subscription and use a correct regional API endpoint for your resource.",
    );
  }
  return openaiError(401, "Incorrect API key provided.", "invalid_api_key");
}

/** The Chat Completions refusal of a Responses-only model, as each provider words it. */
function chatRefusal(azure: boolean | undefined): Response {
  if (azure) {
    return azureError(
      400,
      "OperationNotSupported",
      "The chatCompletion operation does not work with the specified model, gpt-codex. Please choose different " +
        "model and try again.",
    );
  }
  return openaiError(
    404,
    "This model is only supported in v1/responses and not in v1/chat/completions.",
    null,
    "model",
  );
}

/** Mounts the fake deployment's routes under `prefix` (e.g. "/oai/v1") on `upstream`. */
export function mountResponsesApi(upstream: FakeUpstream, prefix: string, options: ResponsesApiOptions) {
  const state: ResponsesApiState = { verified: [], compactions: [], stored: new Map() };
  let counter = 0;
  const guard = (next: (body: Json, seen: SeenRequest) => Response): Responder => (seen) => {
    if (!options.authorized(seen.headers)) return unauthorized(options.azure);
    return next(seen.body ?? {}, seen);
  };
  upstream.routes.set(
    `POST ${prefix}/responses`,
    guard((body) => {
      if (body.previous_response_id && !state.stored.has(body.previous_response_id)) {
        return openaiError(
          400,
          `Previous response with id '${body.previous_response_id}' not found.`,
          "previous_response_not_found",
          "previous_response_id",
        );
      }
      const refused = checkItems(body, options, state);
      if (refused) return refused;
      const { response, events } = responsesAnswer(body, {
        id: `resp_fake${++counter}`,
        secret: options.secret,
        script: options.script ?? [],
      });
      if (body.store !== false) state.stored.set(response.id, response);
      if (body.stream !== true) return Response.json(response);
      return sse(events, true);
    }),
  );
  upstream.routes.set(
    `POST ${prefix}/responses/compact`,
    guard((body) => {
      if (body.stream !== undefined || body.store !== undefined) {
        return openaiError(400, `Unknown parameter: '${body.stream !== undefined ? "stream" : "store"}'.`, null);
      }
      const refused = checkItems(body, options, state);
      if (refused) return refused;
      const items = itemsOf(body.input);
      const id = `cmp_fake${++counter}`;
      const users = items.filter((i) => i.type === "message" && i.role === "user");
      return Response.json({
        id: `resp_fake${counter}`,
        object: "response.compaction",
        created_at: 1767225600,
        output: [...users, {
          type: "compaction",
          id,
          encrypted_content: seal(options.secret, { id, done: items.filter(isOutput).length }),
        }],
        usage: { input_tokens: 40, output_tokens: 8, total_tokens: 48, input_tokens_details: { cached_tokens: 0 } },
      });
    }),
  );
  upstream.routes.set(
    `POST ${prefix}/chat/completions`,
    guard((body) => {
      if (options.responsesOnly?.includes(body.model)) return chatRefusal(options.azure);
      return Response.json({
        id: "chatcmpl-fake",
        object: "chat.completion",
        created: 1767225600,
        model: body.model,
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "chat ok" } }],
        usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
      });
    }),
  );
  return state;
}
