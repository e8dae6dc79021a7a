/**
 * @module A Responses socket's session against a stand-in socket, for what the runtime does that a test client
 * cannot make it do at will: tell of one close twice (its ping's timeout, then the failed read), and messages
 * arriving faster than any real client sends them (a frozen clock gives back no rate). Plus the message sizes.
 */
import assert from "node:assert/strict";
import { memoryPool } from "../../src/conversations/memory_pool.ts";
import { createBodyBudget } from "../../src/core/body_budget.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import type { RequestContext } from "../../src/handlers/context.ts";
import { createSocketBoard } from "../../src/handlers/socket/board.ts";
import { MESSAGE_RATE, utf8Bytes } from "../../src/handlers/socket/intake.ts";
import { runSession } from "../../src/handlers/socket/session.ts";
import { testConfigYaml } from "../_helpers.ts";

/** A socket stand-in: what the session sends, and how it closed it. */
function standIn() {
  const socket = {
    readyState: 1,
    bufferedAmount: 0,
    binaryType: "blob",
    sent: [] as Record<string, unknown>[],
    closed: undefined as { code: number; reason: string } | undefined,
    send: (text: string) => void socket.sent.push(JSON.parse(text)),
    close(code: number, reason: string) {
      socket.readyState = 2;
      socket.closed = { code, reason };
    },
    onclose: null as null | ((event: { code: number; reason: string }) => void),
    onmessage: null as null | ((event: { data: unknown }) => void),
  };
  return socket;
}

/** Runs a session on a stand-in socket, with a frozen clock and no app behind it. */
function session() {
  const config = parseConfig(testConfigYaml("http://127.0.0.1:9", { maxBodyBytes: 8 << 20 }), "test.yaml");
  const logs: Record<string, unknown>[] = [];
  const sockets = createSocketBoard(memoryPool(1 << 20));
  const release = sockets.open("token", 1)!;
  let ends = 0;
  const deps = {
    config,
    now: () => new Date(0),
    log: (line: Record<string, unknown>) => void logs.push(line),
    sockets,
    bodyBudget: createBodyBudget(1 << 20, { waitMs: 0, sleep: () => Promise.resolve(true), now: () => 0 }),
  };
  const ctx = { deps, requestId: "req_1", dispatch: () => assert.fail("nothing is dispatched") };
  const socket = standIn();
  runSession(socket as unknown as WebSocket, {
    ctx: ctx as unknown as RequestContext,
    handshake: { url: "http://127.0.0.1/v1/responses", headers: new Headers() },
    settings: config.responses_socket,
    end: () => (ends++, release()),
  });
  return { socket, logs, sockets, ends: () => ends };
}

Deno.test("a close the runtime tells of twice is logged once, and frees the socket's place once", () => {
  const { socket, logs, sockets, ends } = session();
  socket.onclose!({ code: 1001, reason: "No response from ping frame." });
  socket.onclose!({ code: 1006, reason: "" });
  assert.equal(logs.filter((line) => line.event === "socket_closed").length, 1);
  assert.deepEqual([ends(), sockets.count()], [1, 0]);
});

Deno.test("a socket sending faster than its rate gets the rate's error event, then a close (1008)", () => {
  const { socket } = session();
  for (let i = 0; i < MESSAGE_RATE.burst + 20; i++) socket.onmessage!({ data: "{}" });
  const codes = socket.sent.map((event) => (event.error as { code?: string; param?: string }).param ?? "");
  assert.equal(codes.filter((param) => param === "type").length, MESSAGE_RATE.burst, "each message was answered");
  assert.deepEqual(socket.sent.at(-1)!.error, {
    type: "rate_limit_error",
    code: "websocket_rate_limit_exceeded",
    message: "This socket sent messages faster than 20 a second (after 100 at once); it is closed: open a new one, " +
      "and wait for each answer",
    param: null,
  });
  assert.equal(socket.sent.length, MESSAGE_RATE.burst + 1, "nothing more after the close");
  assert.deepEqual(socket.closed, { code: 1008, reason: "message rate exceeded" });
  socket.onclose!({ code: 1006, reason: "" });
});

Deno.test("a message costs a unit more for each MiB it holds", () => {
  const { socket } = session();
  // 40 messages of 2 MiB cost 3 units each: the 34th is past the 100.
  const big = " ".repeat(2 * 1024 * 1024);
  for (let i = 0; i < 40 && !socket.closed; i++) socket.onmessage!({ data: big });
  assert.equal(socket.sent.length, 34);
  assert.equal((socket.sent.at(-1)!.error as { code: string }).code, "websocket_rate_limit_exceeded");
  socket.onclose!({ code: 1006, reason: "" });
});

Deno.test("utf8Bytes() counts a text as the bytes it is sent as, wherever that can reach the limit", () => {
  assert.equal(utf8Bytes("日".repeat(1400), 4096), 4200);
  assert.equal(utf8Bytes("é".repeat(100_000), 1 << 20), 200_000);
  assert.ok(utf8Bytes("x".repeat(5000), 4096) > 4096);
});
