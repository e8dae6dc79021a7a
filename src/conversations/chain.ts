/**
 * @module Reading a conversation back from the store: the stored responses a `previous_response_id` continues, read
 * in two KV round trips whatever their number (the ids a response continues and their heads are kept with it, so
 * every record is asked for at once; an older record's heads take one more), each record once, its bytes taken from the in-flight budget before they are
 * read; a chain deeper than `responses_store.max_chain_turns` is refused before any of it is read, and one whose
 * items would make the request larger than `max_body_bytes` as soon as its heads tell.
 */
import { GatewayError } from "../core/errors.ts";
import type { JsonObject } from "../core/types.ts";
import { invalidField, shownId } from "../core/validation.ts";
import { jsonBytes } from "./size.ts";
import {
  type KeptHead,
  outputItems,
  type ResponseStore,
  type StoredHead,
  type StoredResponse,
  type StoredTurn,
} from "./store.ts";

/** What reading from the store for one request may cost. */
export interface ReadLimits {
  /** The client's own body in bytes. */
  size: number;
  /** max_body_bytes: the body and the conversation it brings back together are held to it. */
  maxBytes: number;
  /** responses_store.max_chain_turns: the most stored responses one request continues. */
  maxTurns: number;
  /** Takes `bytes` of the in-flight body budget before they are read (a 503 when it stays full). */
  reserve(bytes: number): Promise<void>;
}

/** A conversation read back: its items in order, the ids of its responses and their heads, and the bytes its items add. */
export interface ReadChain {
  items: JsonObject[];
  chain: string[];
  /** The heads of `chain`, to keep with the next response so continuing it reads no head again. */
  heads: KeptHead[];
  bytes: number;
}

const WHOLE = "send the whole conversation in input instead, as with store: false";

/** The 400 for a `previous_response_id` that names nothing usable. */
export function previousNotFound(id: string, why: string): GatewayError {
  return new GatewayError("invalid_request", `Previous response with id '${shownId(id)}' not found: ${why}; ${WHOLE}`, {
    param: "previous_response_id",
    code: "previous_response_not_found",
  });
}

/** The 413 for a request that, made whole from the store, would be larger than a client may send. */
export function madeWholeTooLarge(bytes: number, maxBytes: number, param: string): GatewayError {
  return new GatewayError(
    "request_too_large",
    `${param}: with the conversation it brings back from stored responses the request is about ${bytes} bytes, ` +
      `more than max_body_bytes (${maxBytes}); send less of the conversation, or start a new one`,
    { param },
  );
}

/** The bytes a stored turn's items add to a conversation, as its head says or, for an older record, as measured. */
function replayOf(head: StoredHead, record: StoredTurn): number {
  return head.replay ?? jsonBytes(record.input) + jsonBytes(outputItems(record.response)) - 2;
}

/** Appends each record's input, then its output, to `items`; returns the bytes they add. */
function appendTurns(items: JsonObject[], heads: readonly StoredHead[], records: readonly StoredTurn[]): number {
  let bytes = 0;
  records.forEach((record, i) => {
    for (const item of record.input) items.push(item);
    for (const item of outputItems(record.response)) items.push(item);
    bytes += replayOf(heads[i], record);
  });
  return bytes;
}

/** The sum of `pick` over `heads`. */
function total(heads: readonly StoredHead[], pick: (head: StoredHead) => number): number {
  return heads.reduce((sum, head) => sum + pick(head), 0);
}

/**
 * The items a stored response was made from: those of the responses it continues (input, then output, each) and its
 * own input. An earlier response that was deleted or has expired took its items with it; the list has what is kept
 * (see docs/protocols.md, "Stored responses").
 */
export async function itemsBefore(
  store: ResponseStore,
  token: string,
  record: StoredResponse,
  reserve: (bytes: number) => Promise<void>,
): Promise<JsonObject[]> {
  const heads = (await store.heads(token, record.chain)).filter((head): head is StoredHead => head !== undefined);
  await reserve(total(heads, (head) => head.bytes));
  const records = await store.records(token, heads);
  const kept = heads.flatMap((head, i) => records[i] ? [{ head, turn: records[i] as StoredTurn }] : []);
  const items: JsonObject[] = [];
  appendTurns(items, kept.map(({ head }) => head), kept.map(({ turn }) => turn));
  for (const item of record.input) items.push(item);
  return items;
}

/** The conversation `previous` stands for, within `limits`; throws a 400 or a 413 naming `previous_response_id`. */
export async function readChain(
  store: ResponseStore,
  token: string,
  previous: string,
  limits: ReadLimits & { days: number },
): Promise<ReadChain> {
  const [head] = await store.heads(token, [previous], { chains: true });
  const notKept = () =>
    previousNotFound(
      previous,
      `only responses made with this API key and store: true are kept, for ${limits.days} days`,
    );
  if (!head) throw notKept();
  let chain = head.chain;
  let last: StoredTurn | undefined;
  if (!chain) {
    // A response kept before the ids it continues had a key of their own holds them in its record.
    await limits.reserve(head.bytes);
    [last] = await store.records(token, [head]);
    if (!last) throw notKept();
    chain = last.chain ?? [];
  }
  if (chain.length + 1 > limits.maxTurns) {
    throw invalidField(
      "previous_response_id",
      `it continues a conversation of ${chain.length + 1} stored responses, more than this gateway replays ` +
        `(responses_store.max_chain_turns: ${limits.maxTurns}); send the conversation in input instead (with store ` +
        `not false the answer starts a new chain)`,
    );
  }
  // Heads kept with the ids (since they were) save a round trip; an older record's are read.
  const earlier = head.earlier ?? await store.heads(token, chain);
  const gone = earlier.findIndex((turn) => turn === undefined);
  const expired = (id: string) => previousNotFound(previous, `it continues '${id}', which has expired or was deleted`);
  if (gone !== -1) throw expired(chain[gone]);
  const heads = [...earlier as StoredHead[], head];
  // Nothing is read of a conversation that its heads already show too large.
  const known = limits.size + total(heads, (turn) => turn.replay ?? 0);
  if (known > limits.maxBytes) throw madeWholeTooLarge(known, limits.maxBytes, "previous_response_id");
  const unread = last ? heads.slice(0, -1) : heads;
  await limits.reserve(total(unread, (turn) => turn.bytes));
  const records = await store.records(token, unread);
  if (last) records.push(last);
  const lost = records.findIndex((turn) => turn === undefined);
  if (lost !== -1) throw lost === chain.length ? notKept() : expired(chain[lost]);
  const items: JsonObject[] = [];
  const bytes = appendTurns(items, heads, records as StoredTurn[]);
  return { items, chain: [...chain, previous], heads: heads.map((turn) => turn.kept), bytes };
}
