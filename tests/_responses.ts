/**
 * @module Test wiring for stored Responses: a gateway in front of a scripted model of either upstream kind, a
 * Responses call that reads a whole or streamed answer, what the upstream was sent as a protocol-neutral list of
 * turns, and what KV holds of a token's stored responses.
 */
import assert from "node:assert/strict";
import { type FakeUpstream, fakeUpstream } from "./_fake_upstream.ts";
import { readSse, startGateway, type StartOptions, type TestGateway, within } from "./_helpers.ts";
import { type Kind, KINDS, scripted, type Turn } from "./_scripted_turns.ts";

// deno-lint-ignore no-explicit-any
export type Json = Record<string, any>;

/** A function tool the scripted model calls. */
export const GET_TIME = { type: "function", name: "get_time", parameters: { type: "object" }, strict: false };

/** A tool call, its output and the turns around it: what most conversations below are made of. */
export const TOOL_TURNS: Turn[] = [
  {
    thinking: "Checking the clock.",
    text: "Let me check.",
    call: { id: "call_1", name: "get_time", args: { tz: "UTC" } },
  },
  { text: "It is noon." },
  { text: "You are welcome." },
];

/** Every upstream kind, whole and streamed, with a label for test names. */
export const CASES = KINDS.flatMap((k) =>
  [false, true].map((stream) => ({ ...k, stream, label: `${k.kind} upstream, ${stream ? "streamed" : "whole"}` }))
);

/** A gateway in front of a scripted model, and a Responses call in the case's mode. */
export interface Setup extends AsyncDisposable {
  upstream: FakeUpstream;
  gw: TestGateway;
  /** The caller's token secret (group "oa"). */
  token: string;
  /** The caller's token id. */
  tokenId: string;
  /** POST /v1/responses in the case's mode (stream or not) with `model` filled in; the response object, or throws. */
  respond(body: Json, token?: string, headers?: Record<string, string>): Promise<Json>;
  /** POST /v1/responses expecting a refusal: its status and error object. */
  refused(body: Json, token?: string): Promise<{ status: number; error: Json }>;
  /** GET or DELETE a path with the caller's token (or another). */
  call(method: string, path: string, token?: string): Promise<{ status: number; body: Json }>;
}

/** Starts a scripted model of `kind` and a gateway in front of it. */
export async function setup(
  c: { kind: Kind; model: string; path: string; stream: boolean },
  turns: Turn[] = TOOL_TURNS,
  options: StartOptions = {},
): Promise<Setup> {
  const upstream = fakeUpstream();
  upstream.routes.set(c.path, scripted(c.kind, turns));
  const gw = await startGateway(upstream.url, options);
  const token = gw.tokens.oa;
  const tokenId = (await gw.store.findToken(token))!.id;
  const post = (body: Json, secret = token, headers: Record<string, string> = {}) =>
    gw.post("/v1/responses", { model: c.model, ...body, stream: c.stream }, { "x-api-key": secret, ...headers });
  return {
    upstream,
    gw,
    token,
    tokenId,
    async respond(body, secret, headers) {
      const res = await post(body, secret, headers);
      if (res.status !== 200) throw new Error(`POST /v1/responses answered ${res.status}: ${await res.text()}`);
      if (!c.stream) return await res.json();
      const events = (await within(readSse(res), 5000, "the stream")).map((m) => JSON.parse(m.data));
      const end = events.findLast((e) => e.type === "response.completed" || e.type === "response.incomplete");
      assert.ok(end, `the stream ended: ${JSON.stringify(events.at(-1))}`);
      return end.response;
    },
    async refused(body, secret) {
      const res = await post(body, secret);
      const text = await res.text();
      assert.notEqual(res.status, 200, `refused: ${text}`);
      return { status: res.status, error: JSON.parse(text).error };
    },
    async call(method, path, secret = token) {
      const res = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${secret}` } });
      return { status: res.status, body: await res.json() };
    },
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

/** The output item of `type` in a response. */
export function outputOf(response: Json, type: string): Json {
  const item = response.output.find((i: Json) => i.type === type);
  assert.ok(item, `the response has a ${type} item: ${JSON.stringify(response.output)}`);
  return item;
}

/** The text of a response's message. */
export function textOf(response: Json): string {
  return outputOf(response, "message").content.map((p: Json) => p.text).join("");
}

/** The conversation an upstream request carries, as "role: text" lines whatever its protocol. */
export function turnsSent(kind: Kind, body: Json): string[] {
  const out: string[] = [];
  if (kind === "anthropic") {
    for (const message of body.messages) {
      for (
        const block of typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content
      ) {
        if (block.type === "text") out.push(`${message.role}: ${block.text}`);
        if (block.type === "thinking") out.push(`${message.role} thinks: ${block.thinking} (${block.signature})`);
        if (block.type === "tool_use") out.push(`${message.role} calls ${block.name}(${JSON.stringify(block.input)})`);
        if (block.type === "tool_result") out.push(`tool ${block.tool_use_id}: ${block.content}`);
      }
    }
    return out;
  }
  for (const message of body.messages) {
    if (message.role === "system") continue;
    if (message.role === "tool") out.push(`tool ${message.tool_call_id}: ${message.content}`);
    else if (message.content) out.push(`${message.role}: ${message.content}`);
    for (const call of message.tool_calls ?? []) {
      out.push(`${message.role} calls ${call.function.name}(${call.function.arguments})`);
    }
  }
  return out;
}

/**
 * What the upstream is sent once the model made the call of {@linkcode TOOL_TURNS} and the tool answered `output`:
 * every turn so far (chat upstreams take no reasoning back; Anthropic gets its thinking back with the signature).
 */
export function toolLoopSent(kind: Kind, output: string): string[] {
  const thinking = kind === "anthropic" ? ["assistant thinks: Checking the clock. (sig-1)"] : [];
  return [
    "user: What time is it?",
    ...thinking,
    "assistant: Let me check.",
    'assistant calls get_time({"tz":"UTC"})',
    `tool call_1: ${output}`,
  ];
}

/** The system prompt an upstream request carries, whatever its protocol. */
export function systemSent(kind: Kind, body: Json): string[] {
  if (kind === "anthropic") return (body.system ?? []).map((block: Json) => block.text);
  return body.messages.filter((m: Json) => m.role === "system").map((m: Json) => m.content);
}

/** Every KV key that holds something of a token's stored responses. */
export async function storedKeys(kv: Deno.Kv, tokenId: string): Promise<Deno.KvKey[]> {
  const keys: Deno.KvKey[] = [];
  for (const prefix of [["responses", tokenId], ["response_items", tokenId]]) {
    for await (const entry of kv.list({ prefix })) keys.push(entry.key);
  }
  return keys;
}
