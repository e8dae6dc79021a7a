/**
 * @module A Responses request made whole before translation: the conversation of `previous_response_id` prepended as
 * the API does (each earlier response's input, then its output; instructions do not carry over), and every
 * `item_reference` replaced by the stored item it names, all references read together. What cannot be resolved is a
 * 400 naming the field, never dropped; what would make the request larger than `max_body_bytes` is a 413. Also the
 * record kept of an answer.
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { invalidField, shownId } from "../core/validation.ts";
import { madeWholeTooLarge, readChain, type ReadLimits } from "./chain.ts";
import { jsonBytes } from "./size.ts";
import { type KeptHead, outputItems, type ResponseStore, type StoredResponse } from "./store.ts";

/** What to keep of a request once its answer is in. */
export interface Pending {
  token: string;
  /** The stored responses it continues, oldest first, and their heads. */
  chain: string[];
  chainHeads: KeptHead[];
  /** Its own input, item references resolved. */
  input: JsonObject[];
}

/** A request made whole. */
export interface Conversation {
  /** The body with the whole conversation in `input` and no `previous_response_id`. */
  body: JsonObject;
  /** About the bytes of that body: the client's, and those of the items brought back from the store. */
  size: number;
  /** Set when the answer is to be stored (`store` is not false and the gateway keeps responses). */
  pending?: Pending;
}

/** Options for {@linkcode resolveConversation}. */
export interface ResolveOptions extends ReadLimits {
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

/**
 * The stored items `ids` names (output items of the token's responses), read together: one getMany for their index
 * entries (which keep their response's head), then the answers of those responses, never more of each record than
 * holds its answer.
 */
async function referencedItems(
  store: ResponseStore,
  token: string,
  ids: readonly string[],
  limits: ReadLimits,
): Promise<Map<string, JsonObject>> {
  const found = new Map<string, JsonObject>();
  if (ids.length === 0) return found;
  const owned = await store.itemHeads(token, ids);
  const owners = owned.map((head) => head?.id);
  const byName = new Map(owned.filter((head) => head !== undefined).map((head) => [head.id, head]));
  const names = [...byName.keys()];
  const heads = [...byName.values()];
  const bytes = heads.reduce((sum, head) => sum + (head?.answerBytes ?? 0), 0);
  // However many items it names, a request reads no more answers than a client could send.
  if (bytes > limits.maxBytes) throw madeWholeTooLarge(limits.size + bytes, limits.maxBytes, "input");
  await limits.reserve(bytes);
  const answers = await store.answers(token, heads);
  const byOwner = new Map(names.map((name, i) => [name, answers[i]]));
  ids.forEach((id, i) => {
    const answer = owners[i] === undefined ? undefined : byOwner.get(owners[i]);
    const item = answer && outputItems(answer).find((candidate) => candidate.id === id);
    if (item) found.set(id, item);
  });
  return found;
}

/** The request with its conversation resolved; throws a 400 naming what cannot be, or a 413. */
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
  if (!previous && !referenced && !keep) return { body, size: options.size };
  if (previous && !store) {
    throw invalidField("previous_response_id", `${NOT_KEPT}, so it cannot continue one; ${WHOLE}`);
  }

  const { items: context, chain, heads: chainHeads, bytes } = previous
    ? await readChain(store!, token, previous, options)
    : { items: [], chain: [], heads: [], bytes: 0 };
  let size = options.size + bytes;
  const seen = new Set(context.map((item) => item.id).filter((id) => typeof id === "string"));
  // One already in the conversation is a duplicate, as below, and is not read.
  const wanted = new Set<string>();
  for (const item of items) {
    if (item.type === "item_reference" && typeof item.id === "string" && item.id && !seen.has(item.id)) {
      wanted.add(item.id);
    }
  }
  const found = store ? await referencedItems(store, token, [...wanted], options) : new Map<string, JsonObject>();
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
      if (!seen.has(item.id)) {
        const stored = found.get(item.id);
        if (!stored) {
          throw invalidField(
            `input[${i}]`,
            `item_reference "${item.id}" names no item stored for this API key (it may have expired, been deleted, ` +
              `or come from a response made with store: false); send the item itself instead of a reference`,
          );
        }
        item = stored;
        size += jsonBytes(stored);
      }
    }
    if (typeof item.id === "string" && seen.has(item.id)) {
      throw invalidField(
        `input[${i}]`,
        `Duplicate item found with id '${
          shownId(item.id)
        }': it is already in the conversation (from previous_response_id ` +
          `or an earlier input item); remove it from input`,
      );
    }
    if (typeof item.id === "string") seen.add(item.id);
    own.push(item);
  }
  if (size > options.maxBytes) {
    throw madeWholeTooLarge(size, options.maxBytes, previous ? "previous_response_id" : "input");
  }
  const pending = keep ? { token, chain, chainHeads, input: own } : undefined;
  // Nothing to bring back: the body goes on as the client sent it (a string input stays a string), bytes and all.
  if (!previous && !referenced) return { body, size, pending };
  for (const item of own) context.push(item);
  const resolved: JsonObject = { ...body, input: context };
  delete resolved.previous_response_id;
  return { body: resolved, size, pending };
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
  return { response, input, chain: pending.chain, chainHeads: pending.chainHeads };
}
