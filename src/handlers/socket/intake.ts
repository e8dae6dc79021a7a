/**
 * @module What a Responses socket takes in, before any of it is served: a message rate per socket (so one socket
 * cannot hold the event loop, or send faster than it is answered), the message's size in UTF-8 bytes against
 * `max_body_bytes`, its bytes held in the in-flight body budget while it waits and runs, and its parse into a
 * `response.create` event. A refusal says whether the socket must also close: past its rate, or after a message
 * over the size limit (the runtime reads a message whole before the gateway sees it, so a socket that sent one too
 * large does not get to send another).
 */
import type { BodyBudget, BodyHold } from "../../core/body_budget.ts";
import { SMALL_BODY_BYTES } from "../../core/body_budget.ts";
import { checkJsonDepth } from "../../core/json_depth.ts";
import { GatewayError } from "../../core/errors.ts";
import { isObject, type JsonObject } from "../../core/types.ts";
import { invalidField } from "../../core/validation.ts";

/**
 * A socket's message rate: each message costs a unit, and one more per MiB it holds; a socket has `burst` units at
 * once and gets `perSecond` back each second (see docs/protocols.md, "WebSocket mode").
 */
export const MESSAGE_RATE = { burst: 100, perSecond: 20, bytesPerUnit: 1024 * 1024 };

/** Close codes (RFC 6455): a policy the client broke, and a message too big to take. */
export const POLICY_VIOLATION = 1008;
export const MESSAGE_TOO_BIG = 1009;

/** A message taken: the event, and its share of the body budget (to release when its response is over). */
export interface Taken {
  message: JsonObject;
  hold: BodyHold;
}

/** A message refused: the error event's error, and the close that follows it, if one does. */
export interface Refused {
  error: GatewayError;
  close?: { code: number; reason: string };
}

/** The intake of one socket. */
export interface Intake {
  take(data: unknown): Taken | Refused;
}

/** The intake of a socket whose messages may be `maxBytes` long, held in `budget`; `now` in ms. */
export function socketIntake(options: { maxBytes: number; budget: BodyBudget; now(): number }): Intake {
  const { maxBytes, budget } = options;
  let units: number = MESSAGE_RATE.burst;
  let at = options.now();
  return {
    take(data) {
      const now = options.now();
      units = Math.min(MESSAGE_RATE.burst, units + ((now - at) / 1000) * MESSAGE_RATE.perSecond);
      at = now;
      const length = typeof data === "string" ? data.length : data instanceof ArrayBuffer ? data.byteLength : 0;
      const cost = Math.min(MESSAGE_RATE.burst, 1 + Math.floor(length / MESSAGE_RATE.bytesPerUnit));
      if (cost > units) {
        return {
          error: new GatewayError(
            "rate_limit",
            `This socket sent messages faster than ${MESSAGE_RATE.perSecond} a second (after ${MESSAGE_RATE.burst} ` +
              "at once); it is closed: open a new one, and wait for each answer",
            { code: "websocket_rate_limit_exceeded" },
          ),
          close: { code: POLICY_VIOLATION, reason: "message rate exceeded" },
        };
      }
      units -= cost;
      if (typeof data !== "string") {
        return {
          error: new GatewayError("invalid_request", "Messages must be JSON text; binary messages are not accepted", {
            code: "invalid_message",
          }),
        };
      }
      const bytes = utf8Bytes(data, maxBytes);
      if (bytes > maxBytes) {
        return {
          error: new GatewayError(
            "request_too_large",
            `Message is larger than the limit of ${maxBytes} bytes (max_body_bytes); the socket is closed`,
          ),
          close: { code: MESSAGE_TOO_BIG, reason: "message too big" },
        };
      }
      const hold = budget.tryHold(bytes);
      if (!hold) {
        return {
          error: new GatewayError(
            "unavailable",
            "The gateway is receiving too many large requests at once; try again shortly",
            { headers: { "retry-after": "1" } },
          ),
        };
      }
      try {
        return { message: parseMessage(data), hold };
      } catch (err) {
        hold.release();
        return { error: err as GatewayError };
      }
    },
  };
}

/**
 * The size of `text` in UTF-8, counted only where it matters: a text too short to reach the limit, or the size at
 * which the budget lets any body in, even at three bytes a character, counts its characters (close enough there).
 */
export function utf8Bytes(text: string, maxBytes: number): number {
  // A character of UTF-16 is at least one byte of UTF-8.
  if (text.length > maxBytes) return text.length;
  if (text.length * 3 <= Math.min(maxBytes, SMALL_BODY_BYTES)) return text.length;
  return new TextEncoder().encode(text).byteLength;
}

/** A client message as a `response.create` event; throws the error naming what is wrong with it. */
function parseMessage(data: string): JsonObject {
  checkJsonDepth(data, "Message");
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (err) {
    throw new GatewayError("invalid_request", `Message is not valid JSON: ${(err as Error).message}`, {
      code: "invalid_json",
    });
  }
  if (!isObject(value)) throw invalidField("(message)", "must be a JSON object with a type");
  if (value.type !== "response.create") {
    const type = typeof value.type === "string" ? `'${value.type.slice(0, 64)}'` : "missing";
    throw invalidField("type", `is ${type}; this gateway accepts response.create events`);
  }
  if (value.stream_id !== undefined && (typeof value.stream_id !== "string" || value.stream_id.length > 256)) {
    throw invalidField("stream_id", "must be a string of at most 256 characters");
  }
  if (value.generate !== undefined && typeof value.generate !== "boolean") {
    throw invalidField("generate", "must be a boolean");
  }
  if (value.background === true) throw invalidField("background", "is not supported on a WebSocket");
  return value;
}
