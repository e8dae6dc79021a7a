/**
 * @module A Responses request made whole before translation: the conversation of `previous_response_id` prepended as
 * the API does (each earlier response's input, then its output; instructions do not carry over), and every
 * `item_reference` replaced by the stored item it names. What cannot be resolved is a 400 naming the field, never
 * dropped. Also the record kept of an answer, and the items a stored response was made from.
 */
import { GatewayError } from "../core/errors.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { invalidField } from "../core/validation.ts";
import { outputItems, type ResponseStore, type StoredResponse } from "./store.ts";

/** What to keep of a request once its answer is in. */
export interface Pending {
  token: string;
  /** The stored responses it continues, oldest first. */
  chain: string[];
  /** Its own input, item references resolved. */
  input: JsonObject[];
}

/** A request made whole. */
export interface Conversation {
  /** The body with the whole conversation in `input` and no `previous_response_id`. */
  body: JsonObject;
  /** Set when the answer is to be stored (`store` is not false and the gateway keeps responses). */
  pending?: Pending;
}

/** Options for {@linkcode resolveConversation}. */
export interface ResolveOptions {
  /** The caller's token id: only its own responses are seen. */
  token: string;
  /** Undefined when the gateway keeps no responses. */
  store?: ResponseStore;
  /** Days a response is kept, for the messages. */
  days: number;
}

const NOT_KEPT = "this gateway does not keep responses (responses_store.enabled is false)";
const WHOLE = "send the whole conversation in input instead, as with store: false";

/** `input` as a list of items: a string is one user message, and an item with only a role is a message. */
export function inputItems(input: unknown): JsonObject[] {
  if (typeof input === "string") return [{ type: "message", role: "user", content: input }];
  return (Array.isArray(input) ? input.filter(isObject) : []).map((item) =>
    item.type === undefined && typeof item.role === "string" ? { type: "message", ...item } : item
  );
}

function previousNotFound(id: string, why: string): GatewayError {
  return new GatewayError("invalid_request", `Previous response with id '${id}' not found: ${why}; ${WHOLE}`, {
    param: "previous_response_id",
    code: "previous_response_not_found",
  });
}

/**
 * The items a stored response was made from: those of the responses it continues (input, then output, each) and its
 * own input. `missing` names an earlier response that is no longer stored, when one is not.
 */
export async function itemsBefore(
  store: ResponseStore,
  token: string,
  record: StoredResponse,
): Promise<{ items: JsonObject[]; missing?: string }> {
  const earlier = await store.load(token, record.chain);
  const gone = earlier.findIndex((response) => response === undefined);
  if (gone !== -1) return { items: [], missing: record.chain[gone] };
  const items = earlier.flatMap((response) => [...response!.input, ...outputItems(response!.response)]);
  return { items: [...items, ...record.input] };
}

/** The request with its conversation resolved; throws a 400 naming what cannot be. */
export async function resolveConversation(body: JsonObject, options: ResolveOptions): Promise<Conversation> {
  const { store, token } = options;
  const previous = body.previous_response_id;
  if (previous !== undefined && previous !== null && typeof previous !== "string") {
    throw invalidField("previous_response_id", "must be a string");
  }
  // A conversation object would prepend its items as previous_response_id does; ignoring it would drop them.
  if (body.conversation !== undefined && body.conversation !== null) {
    throw invalidField(
      "conversation",
      "conversation objects are not supported by this gateway; continue with previous_response_id, or send the whole " +
        "conversation in input",
    );
  }
  const items = inputItems(body.input);
  const referenced = items.some((item) => item.type === "item_reference");
  const keep = store !== undefined && body.store !== false;
  if (!previous && !referenced && !keep) return { body };
  if (previous && !store) {
    throw invalidField("previous_response_id", `${NOT_KEPT}, so it cannot continue one; ${WHOLE}`);
  }

  let context: JsonObject[] = [];
  let chain: string[] = [];
  if (previous) {
    const [record] = await store!.load(token, [previous]);
    if (!record) {
      throw previousNotFound(
        previous,
        `only responses made with this API key and store: true are kept, for ${options.days} days`,
      );
    }
    const before = await itemsBefore(store!, token, record);
    if (before.missing) {
      throw previousNotFound(previous, `it continues '${before.missing}', which has expired or was deleted`);
    }
    context = [...before.items, ...outputItems(record.response)];
    chain = [...record.chain, previous];
  }

  const seen = new Set(context.map((item) => item.id).filter((id) => typeof id === "string"));
  const found = new Map<string, StoredResponse | undefined>();
  const own: JsonObject[] = [];
  for (let i = 0; i < items.length; i++) {
    let item = items[i];
    if (item.type === "item_reference") {
      if (typeof item.id !== "string" || !item.id) throw invalidField(`input[${i}].id`, "is required");
      if (!store) {
        throw invalidField(
          `input[${i}]`,
          `item_reference "${item.id}" cannot be resolved: ${NOT_KEPT}; send the item itself`,
        );
      }
      // One already in the conversation is a duplicate, as below.
      if (!seen.has(item.id)) {
        const stored = await storedItem(store, token, item.id, found);
        if (!stored) {
          throw invalidField(
            `input[${i}]`,
            `item_reference "${item.id}" names no item stored for this API key (it may have expired, been deleted, ` +
              `or come from a response made with store: false); send the item itself instead of a reference`,
          );
        }
        item = stored;
      }
    }
    if (typeof item.id === "string" && seen.has(item.id)) {
      throw invalidField(
        `input[${i}]`,
        `Duplicate item found with id '${item.id}': it is already in the conversation (from previous_response_id ` +
          `or an earlier input item); remove it from input`,
      );
    }
    if (typeof item.id === "string") seen.add(item.id);
    own.push(item);
  }
  const resolved: JsonObject = { ...body, input: [...context, ...own] };
  delete resolved.previous_response_id;
  return { body: resolved, pending: keep ? { token, chain, input: own } : undefined };
}

/** The stored item `id` (an output item of one of the token's responses), from `found` when already loaded. */
async function storedItem(
  store: ResponseStore,
  token: string,
  id: string,
  found: Map<string, StoredResponse | undefined>,
): Promise<JsonObject | undefined> {
  const owner = await store.itemOwner(token, id);
  if (!owner) return undefined;
  if (!found.has(owner)) found.set(owner, (await store.load(token, [owner]))[0]);
  const record = found.get(owner);
  const item = record && outputItems(record.response).find((candidate) => candidate.id === id);
  return item && structuredClone(item);
}

/** Id prefixes of the items the gateway names, after the API's own. */
const ID_PREFIX: Record<string, string> = {
  message: "msg",
  function_call: "fc",
  function_call_output: "fco",
  reasoning: "rs",
};

/**
 * What is kept of an answer: the response as its client got it, and the request's own input with every item named
 * (an id is what input_items pages by) and every message's text as content parts, as the API lists them.
 */
export function storedRecord(pending: Pending, response: JsonObject): StoredResponse {
  const tail = String(response.id).replace(/^resp_/, "");
  const input = pending.input.map((item, n) => {
    const { id, ...rest } = item;
    if (rest.type === "message" && typeof rest.content === "string") {
      rest.content = [{ type: rest.role === "assistant" ? "output_text" : "input_text", text: rest.content }];
    }
    const name = typeof id === "string" && id ? id : `${ID_PREFIX[String(rest.type)] ?? "item"}_${tail}_in${n}`;
    return { id: name, ...rest };
  });
  return { response, input, chain: pending.chain };
}
