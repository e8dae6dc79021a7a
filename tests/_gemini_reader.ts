/**
 * @module A Gemini client's side: calling the gateway as the Gen AI SDK does, and reading an answer
 * (GenerateContentResponse bodies and streamed chunks), checked.
 */
import assert from "node:assert/strict";
import type { SseMessage } from "../src/core/sse.ts";
import { emptySummary, type Summary } from "./_client_readers.ts";
import { deadlineFetch, type TestGateway } from "./_helpers.ts";

/** A Gemini API call with the default group's token as x-goog-api-key (headers may replace it); GET without a body. */
export function geminiCall(
  gw: TestGateway,
  path: string,
  body?: unknown,
  headers: HeadersInit = {},
): Promise<Response> {
  return deadlineFetch()(`${gw.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": gw.tokens.default, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

type Obj = Record<string, unknown>;

const GEMINI_STOP: Record<string, Summary["stop"]> = {
  STOP: "end",
  MAX_TOKENS: "length",
  SAFETY: "filter",
  RECITATION: "filter",
};

/** Adds one response's parts to the summary; every candidate speaks as the model. */
function addParts(out: Summary, chunk: Obj): void {
  const candidates = chunk.candidates as Obj[];
  assert.equal(candidates.length, 1, "one candidate");
  const content = candidates[0].content as Obj;
  assert.equal(content.role, "model");
  for (const part of content.parts as Obj[]) {
    if (typeof part.thoughtSignature === "string" && !out.sealed.includes(part.thoughtSignature)) {
      out.sealed.push(part.thoughtSignature);
    }
    if (part.thought === true) out.reasoning += String(part.text ?? "");
    else if (typeof part.text === "string") out.text += part.text;
    else if (part.functionCall) {
      const call = part.functionCall as Obj;
      assert.equal(typeof call.name, "string");
      assert.ok(call.args !== null && typeof call.args === "object", "args is an object");
      out.tools.push({ id: String(call.id ?? ""), name: String(call.name), args: call.args });
    } else assert.fail(`unknown part ${JSON.stringify(part)}`);
  }
}

/** The finish of the final response: Gemini has no tool stop, so STOP with calls reads as a tool stop. */
function finish(out: Summary, chunk: Obj): void {
  const candidate = (chunk.candidates as Obj[])[0];
  out.stop = GEMINI_STOP[String(candidate.finishReason)];
  if (out.stop === "end" && out.tools.length > 0) out.stop = "tool";
  const u = chunk.usageMetadata as Obj;
  assert.ok(u, "usageMetadata with the finish");
  const thoughts = Number(u.thoughtsTokenCount ?? 0);
  assert.equal(u.totalTokenCount, Number(u.promptTokenCount) + Number(u.candidatesTokenCount) + thoughts);
  out.usage = {
    input: Number(u.promptTokenCount),
    output: Number(u.candidatesTokenCount) + thoughts,
    cached: Number(u.cachedContentTokenCount ?? 0),
  };
}

/** Reads a streamed answer: unnamed events, finishReason only on the last, nothing after an error. */
export function readGeminiStream(events: SseMessage[]): Summary {
  const out = emptySummary();
  let ended = false;
  for (const e of events) {
    assert.ok(!ended, "event after the finish or an error");
    assert.equal(e.event, undefined, "Gemini events are unnamed");
    const data = JSON.parse(e.data) as Obj;
    if (data.error) {
      const error = data.error as Obj;
      assert.equal(typeof error.code, "number");
      assert.equal(typeof error.status, "string");
      out.error = String(error.message);
      ended = true;
      continue;
    }
    addParts(out, data);
    if ((data.candidates as Obj[])[0].finishReason) {
      finish(out, data);
      ended = true;
    }
  }
  assert.ok(ended, "the stream ends with a finishReason or an error");
  return out;
}

/** Reads a whole answer. */
export function readGeminiJson(body: Obj): Summary {
  const out = emptySummary();
  addParts(out, body);
  finish(out, body);
  return out;
}
