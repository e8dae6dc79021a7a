/**
 * @module Strict readers of what a Responses client receives: contiguous sequence numbers, items added before use and
 * one terminal event (see docs/protocols.md, "Responses streams"), reduced to the summary the other readers give.
 */
import assert from "node:assert/strict";
import type { SseMessage } from "../src/core/sse.ts";
import { emptySummary, type Summary } from "./_client_readers.ts";

type Obj = Record<string, unknown>;

function addResponsesItems(out: Summary, items: Obj[]): void {
  for (const item of items) {
    if (item.type === "message") {
      for (const part of item.content as Obj[]) out.text += part.text;
    } else if (item.type === "reasoning") {
      for (const part of item.summary as Obj[]) out.reasoning += part.text;
      if (item.encrypted_content) out.sealed.push(String(item.encrypted_content));
    } else if (item.type === "function_call") {
      assert.ok(item.call_id, "function_call has a call_id");
      out.tools.push({ id: String(item.call_id), name: String(item.name), args: JSON.parse(String(item.arguments)) });
    }
  }
}

function responsesEnd(out: Summary, response: Obj): void {
  assert.match(String(response.id), /^resp_/);
  const u = response.usage as Obj;
  for (const key of ["input_tokens", "output_tokens", "total_tokens"]) assert.ok(Number.isInteger(u[key]), key);
  const cached = Number((u.input_tokens_details as Obj).cached_tokens);
  out.usage = { input: Number(u.input_tokens), output: Number(u.output_tokens), cached };
  const reason = (response.incomplete_details as Obj | null)?.reason;
  out.stop = response.status === "completed"
    ? out.tools.length > 0 ? "tool" : "end"
    : reason === "max_output_tokens"
    ? "length"
    : "filter";
}

/** Reads Responses events, asserting contiguous sequence numbers from 0, items added before use and a terminal event. */
export function readResponsesStream(events: SseMessage[]): Summary {
  const out = emptySummary();
  const items: Obj[] = [];
  const parts = new Set<string>();
  let ended = false;
  let id: unknown;
  events.forEach((e, i) => {
    const data = JSON.parse(e.data) as Obj;
    assert.equal(data.sequence_number, i, "sequence_number is contiguous from 0");
    assert.equal(e.event, data.type);
    assert.ok(!ended || data.type === "error", `${data.type} after the terminal event`);
    if (i === 0) assert.equal(data.type, "response.created");
    if (data.response) {
      const response = data.response as Obj;
      id ??= response.id;
      assert.equal(response.id, id, "the response id does not change");
    }
    if (typeof data.output_index === "number" && data.type !== "response.output_item.added") {
      assert.ok(data.output_index < items.length, `missing output at index ${data.output_index}`);
    }
    switch (data.type) {
      case "response.output_item.added":
        assert.equal(data.output_index, items.length);
        items.push(data.item as Obj);
        break;
      case "response.content_part.added":
        parts.add(`${data.output_index}:${data.content_index}`);
        break;
      case "response.output_text.delta":
        assert.ok(parts.has(`${data.output_index}:${data.content_index}`), "content part added before text");
        break;
      case "response.output_item.done":
        items[data.output_index as number] = data.item as Obj;
        break;
      case "response.completed":
      case "response.incomplete":
        ended = true;
        addResponsesItems(out, items);
        responsesEnd(out, data.response as Obj);
        break;
      case "response.failed":
        ended = true;
        out.error = String(((data.response as Obj).error as Obj).message);
        break;
      case "error":
        assert.ok(out.error !== undefined, "response.failed precedes error");
        break;
    }
  });
  assert.ok(ended, "stream ends with a terminal event");
  return out;
}

/** Reads a Responses object. */
export function readResponsesJson(body: Obj): Summary {
  const out = emptySummary();
  assert.equal(body.object, "response");
  addResponsesItems(out, body.output as Obj[]);
  responsesEnd(out, body);
  return out;
}
