/**
 * @module The admin service's refusals, in one shape wherever they arise: something that does not exist (404) and a
 * change that conflicts with what is there (409).
 */
import { GatewayError } from "../core/errors.ts";

/** A 404 naming the kind of thing and its id. */
export function notFound(what: string, id: string): GatewayError {
  return new GatewayError("not_found", `${what} "${id}" does not exist`, { code: "not_found" });
}

/** A 409: the change does not fit what is there now. */
export function conflict(message: string): GatewayError {
  return new GatewayError("invalid_request", message, { status: 409, code: "conflict" });
}
