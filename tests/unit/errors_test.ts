/** @module Unit tests for rendering the gateway's one error type in each client protocol. */
import assert from "node:assert/strict";
import { type ErrorKind, GatewayError, kindForStatus } from "../../src/core/errors.ts";
import { errorBody, errorEvents, errorResponse } from "../../src/protocols/client_errors.ts";

const KINDS: { kind: ErrorKind; status: number; anthropic: string; openai: string }[] = [
  { kind: "invalid_request", status: 400, anthropic: "invalid_request_error", openai: "invalid_request_error" },
  { kind: "authentication", status: 401, anthropic: "authentication_error", openai: "invalid_request_error" },
  { kind: "not_found", status: 404, anthropic: "not_found_error", openai: "invalid_request_error" },
  { kind: "request_too_large", status: 413, anthropic: "request_too_large", openai: "invalid_request_error" },
  { kind: "rate_limit", status: 429, anthropic: "rate_limit_error", openai: "rate_limit_error" },
  { kind: "overloaded", status: 529, anthropic: "overloaded_error", openai: "server_error" },
  { kind: "upstream", status: 502, anthropic: "api_error", openai: "server_error" },
  { kind: "unavailable", status: 503, anthropic: "api_error", openai: "server_error" },
  { kind: "timeout", status: 504, anthropic: "timeout_error", openai: "server_error" },
  { kind: "internal", status: 500, anthropic: "api_error", openai: "server_error" },
];
for (const c of KINDS) {
  Deno.test(`errorResponse() renders ${c.kind} as ${c.status} in both shapes`, async () => {
    const err = new GatewayError(c.kind, "Something failed", { param: "model" });
    const anthropic = errorResponse(err, "anthropic", "req_1");
    assert.equal(anthropic.status, c.status);
    assert.equal(anthropic.headers.get("content-type"), "application/json");
    const a = await anthropic.json();
    assert.deepEqual(Object.keys(a), ["type", "error", "request_id"]);
    assert.equal(a.error.type, c.anthropic);
    const o = await errorResponse(err, "openai-chat").json();
    assert.deepEqual(Object.keys(o.error), ["message", "type", "param", "code"]);
    assert.equal(o.error.type, c.openai);
    assert.equal(o.error.param, "model");
  });
}

Deno.test("errorBody() hides an internal error's message", () => {
  const body = errorBody(new GatewayError("internal", "stack trace with a secret"), "anthropic");
  assert.deepEqual(body.error, { type: "api_error", message: "Internal error" });
});

Deno.test("errorResponse() carries retry-after", () => {
  const res = errorResponse(new GatewayError("rate_limit", "x", { headers: { "retry-after": "3" } }), "anthropic");
  assert.equal(res.headers.get("retry-after"), "3");
});

const STATUSES: [number, ErrorKind][] = [
  [400, "invalid_request"],
  [401, "upstream"],
  [403, "upstream"],
  [404, "not_found"],
  [408, "timeout"],
  [413, "request_too_large"],
  [422, "invalid_request"],
  [429, "rate_limit"],
  [500, "upstream"],
  [503, "unavailable"],
  [504, "timeout"],
  [529, "overloaded"],
];
for (const [status, kind] of STATUSES) {
  Deno.test(`kindForStatus(${status}) is ${kind}`, () => assert.equal(kindForStatus(status), kind));
}

Deno.test("errorEvents() gives each protocol its in-band error", () => {
  const err = new GatewayError("overloaded", "Busy");
  const [a] = errorEvents(err, "anthropic");
  assert.equal(a.event, "error");
  assert.deepEqual(JSON.parse(a.data), { type: "error", error: { type: "overloaded_error", message: "Busy" } });
  const [c] = errorEvents(err, "openai-chat");
  assert.equal(c.event, undefined);
  assert.equal(JSON.parse(c.data).error.message, "Busy");
  const [r] = errorEvents(err, "openai-responses");
  assert.equal(r.event, "error");
  assert.equal(JSON.parse(r.data).type, "error");
});
