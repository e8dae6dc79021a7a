/**
 * @module The registry of wire protocols: each protocol's descriptor by name, and the error shape of every protocol
 * the gateway's endpoints speak (the model protocols, and JSON-RPC on /mcp). A new protocol is a module of its own in
 * this folder and a line here; what reads the registry (checks.ts, client_errors.ts, the usage meter, the relay)
 * then knows it.
 */
import type { Protocol, ServedProtocol } from "../core/types.ts";
import { messagesProtocol } from "./anthropic.ts";
import { chatProtocol } from "./chat.ts";
import { geminiProtocol } from "./gemini.ts";
import { mcpErrors } from "./mcp.ts";
import { responsesProtocol } from "./responses.ts";
import type { ErrorShape, WireProtocol } from "./wire.ts";

/** Every wire protocol a client or an upstream speaks, by name. */
export const PROTOCOLS = {
  anthropic: messagesProtocol,
  "openai-chat": chatProtocol,
  "openai-responses": responsesProtocol,
  gemini: geminiProtocol,
} as const satisfies Record<Protocol, WireProtocol>;

/** The descriptor of the protocol named `name`. */
export function wireProtocol<P extends Protocol>(name: P): (typeof PROTOCOLS)[P] {
  return PROTOCOLS[name];
}

/** How a client of `protocol` is told of an error. */
export function errorShape(protocol: ServedProtocol): ErrorShape {
  return protocol === "mcp" ? mcpErrors : PROTOCOLS[protocol].errors;
}
