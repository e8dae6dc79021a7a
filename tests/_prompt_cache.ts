/**
 * @module Fake deployments that each keep a prompt cache of their own, as Anthropic's API does: the prefix up to each
 * `cache_control` breakpoint is cached where it was sent, and every answer's usage says how much of the prompt was read
 * from that cache and how much written to it. Plus Claude-Code-like sessions (a cached system prompt, a growing
 * conversation whose last block is marked) and the measures the affinity tests judge.
 */
import { fakeUpstream, jsonReply, sseReply } from "./_fake_upstream.ts";
import {
  anthropicMessage,
  readSse,
  startGateway,
  type StartOptions,
  type TestGateway,
  UPSTREAM_KEYS,
} from "./_helpers.ts";

type Json = Record<string, unknown>;

/** One answered request as a deployment saw it. */
export interface CacheTurn {
  deployment: string;
  /** The session label the conversation carries in its first message. */
  session: string;
  read: number;
  written: number;
  input: number;
}

/** Deployments on one fake server, each at `${url}/${name}/v1`. */
export interface CachingDeployments extends AsyncDisposable {
  url: string;
  /** Every answered request, in order. */
  turns: CacheTurn[];
  /** Deployments that answer 500 while listed here. */
  failing: Set<string>;
  /** Requests each deployment was sent, failed ones included. */
  sent: Map<string, number>;
}

/** The fewest prompt tokens a breakpoint caches (Anthropic's floor for most models). */
const MIN_CACHED_TOKENS = 1024;

/** A 53-bit string hash (two multiplicative lanes), enough to tell prompt prefixes apart in a test. */
function hash53(text: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/** The prompt in cache order (tools, system, messages) as blocks; a mark is where a breakpoint sits. */
function promptBlocks(body: Json): { text: string; mark: boolean }[] {
  const blocks: { text: string; mark: boolean }[] = [];
  const add = (part: unknown, where: string) => {
    const { cache_control, ...rest } = typeof part === "object" && part !== null ? part as Json : { text: part };
    // The mark is not part of the content: a block keeps its cache entry when the breakpoint moves on.
    blocks.push({ text: `${where}:${JSON.stringify(rest)}`, mark: cache_control !== undefined });
  };
  for (const tool of (body.tools as unknown[] | undefined) ?? []) add(tool, "tool");
  const system = body.system;
  if (typeof system === "string") add(system, "system");
  else for (const block of (system as unknown[] | undefined) ?? []) add(block, "system");
  for (const message of body.messages as Json[]) {
    const content = message.content;
    if (typeof content === "string") add({ type: "text", text: content }, String(message.role));
    else for (const block of content as unknown[]) add(block, String(message.role));
  }
  // A top-level cache_control puts the breakpoint on the last block.
  if (body.cache_control !== undefined && blocks.length > 0) blocks[blocks.length - 1].mark = true;
  return blocks;
}

/** Starts deployments `names` with a prompt cache each; they answer Messages requests, streamed or not. */
export function cachingDeployments(names: readonly string[]): CachingDeployments {
  const upstream = fakeUpstream();
  const turns: CacheTurn[] = [];
  const failing = new Set<string>();
  const sent = new Map<string, number>();
  for (const name of names) {
    const cache = new Set<number>();
    sent.set(name, 0);
    upstream.routes.set(`POST /${name}/v1/messages`, (seen) => {
      sent.set(name, sent.get(name)! + 1);
      if (seen.headers.get("x-api-key") !== UPSTREAM_KEYS.TEST_ANTHROPIC_KEY) {
        return jsonReply({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }, 401);
      }
      if (failing.has(name)) {
        return jsonReply({ type: "error", error: { type: "api_error", message: "Internal server error" } }, 500);
      }
      const body = seen.body!;
      const blocks = promptBlocks(body);
      let prefix = 0;
      let tokens = 0;
      const keys: number[] = [];
      const totals: number[] = [];
      for (const block of blocks) {
        prefix = hash53(block.text, prefix % 4294967296);
        tokens += Math.ceil(block.text.length / 4);
        keys.push(prefix);
        totals.push(tokens);
      }
      const lastMark = blocks.findLastIndex((block) => block.mark);
      let readEnd = -1;
      for (let i = lastMark; i >= 0 && readEnd === -1; i--) if (cache.has(keys[i])) readEnd = i;
      const read = readEnd === -1 ? 0 : totals[readEnd];
      let written = 0;
      for (let i = readEnd + 1; i <= lastMark; i++) {
        if (!blocks[i].mark || totals[i] < MIN_CACHED_TOKENS) continue;
        cache.add(keys[i]);
        written = totals[i] - read;
      }
      const input = tokens - read - written;
      const first = JSON.stringify((body.messages as Json[])[0]);
      const session = /\[session ([\w-]+)\]/.exec(first)?.[1] ?? "?";
      turns.push({ deployment: name, session, read, written, input });
      const usage = { input_tokens: input, cache_read_input_tokens: read, cache_creation_input_tokens: written };
      const text = `answer ${(body.messages as Json[]).length}`;
      return body.stream ? sseReply(streamed(text, usage)) : jsonReply(message(text, { ...usage, output_tokens: 3 }));
    });
  }
  return {
    url: upstream.url,
    turns,
    failing,
    sent,
    [Symbol.asyncDispose]: () => upstream[Symbol.asyncDispose](),
  };
}

function message(text: string, usage: Json): Json {
  return { ...anthropicMessage(text), model: "claude-pool", usage };
}

function streamed(text: string, usage: Json): string {
  const event = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const start = { ...message("", { ...usage, output_tokens: 1 }), content: [], stop_reason: null };
  return [
    event("message_start", { message: start }),
    event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    event("content_block_delta", { index: 0, delta: { type: "text_delta", text } }),
    event("content_block_stop", { index: 0 }),
    event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 3 } }),
    event("message_stop", {}),
  ].join("");
}

/** A coding-agent-like system prompt of about 2,000 tokens, the same for every session. */
const SYSTEM_TEXT = "You are a careful coding agent. Follow the repository's conventions. ".repeat(120);

/** One session's conversation so far. */
export interface Conversation {
  label: string;
  messages: Json[];
}

/** A new conversation; its first message names the session, so the fake deployments can tell sessions apart. */
export function conversation(label: string): Conversation {
  return {
    label,
    messages: [{ role: "user", content: `[session ${label}] Fix the failing test in module ${label}.` }],
  };
}

/** The next request of `conv`: cached system prompt, the whole conversation, its last block marked for caching. */
export function turnBody(conv: Conversation, options: { model?: string; stream?: boolean; ttl?: "1h" } = {}): Json {
  const mark = { type: "ephemeral", ...options.ttl ? { ttl: options.ttl } : {} };
  const messages = conv.messages.map((message, i) => {
    if (i < conv.messages.length - 1) return message;
    const text = message.content as string;
    return { ...message, content: [{ type: "text", text, cache_control: mark }] };
  });
  return {
    model: options.model ?? "claude-pool",
    max_tokens: 256,
    stream: options.stream ?? false,
    system: [{ type: "text", text: SYSTEM_TEXT, cache_control: mark }],
    messages,
  };
}

/** Adds the answer and the next tool output (about 2,000 tokens) to `conv`. */
export function nextTurn(conv: Conversation, answer: string): void {
  const output = `tool output for ${conv.label}, turn ${conv.messages.length}: ` + "line of build log\n".repeat(450);
  conv.messages.push({ role: "assistant", content: answer }, { role: "user", content: output });
}

/**
 * The share of what each turn left cached that the session's next turn read back, over every session: the measure a
 * session's cache bill follows (a turn on another deployment writes again what it could have read).
 */
export function readBack(turns: readonly CacheTurn[]): number {
  const last = new Map<string, CacheTurn>();
  let read = 0;
  let cached = 0;
  for (const turn of turns) {
    const before = last.get(turn.session);
    if (before) {
      cached += before.read + before.written;
      read += Math.min(turn.read, before.read + before.written);
    }
    last.set(turn.session, turn);
  }
  return read / cached;
}

/** The share of answered requests each deployment carried. */
export function shares(turns: readonly CacheTurn[], names: readonly string[]): number[] {
  return names.map((name) => turns.filter((turn) => turn.deployment === name).length / turns.length);
}

/** A deterministic generator of numbers in [0, 1) (mulberry32), so weighted choices repeat run after run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The two deployments of model claude-pool in {@linkcode poolGateway}, in config order. */
export const POOL = ["pool-a", "pool-b"] as const;

/** A gateway whose model claude-pool has two equal deployments on `deployments`, and a token for it. */
export async function poolGateway(
  deployments: CachingDeployments,
  options: StartOptions = {},
): Promise<{ gateway: TestGateway; token: string; tokenId: string }> {
  const gateway = await startGateway(deployments.url, {
    extraUpstreams: POOL.map((name) =>
      `  - { name: ${name}, protocol: anthropic, base_url: "${deployments.url}/${name}/v1", ` +
      `api_key_env: TEST_ANTHROPIC_KEY, models: [claude-pool] }`
    ).join("\n"),
    extraGroups: "  - { name: pool, listing: anthropic, models: [claude-pool] }",
    ...options,
  });
  const { secret, record } = await gateway.store.createToken({ group: "pool" });
  return { gateway, token: secret, tokenId: record.id };
}

/** Sends `conv`'s next turn as a Messages request and adds its answer; returns the status. */
export async function turn(
  url: string,
  token: string,
  conv: Conversation,
  options: { stream?: boolean; headers?: HeadersInit; ttl?: "1h" } = {},
): Promise<number> {
  const res = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json", ...options.headers },
    body: JSON.stringify(turnBody(conv, options)),
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    return res.status;
  }
  const text = options.stream
    ? (await readSse(res)).map((event) => JSON.parse(event.data)).find((data) => data.delta?.text)?.delta.text
    : (await res.json()).content[0].text;
  nextTurn(conv, text);
  return 200;
}
