/**
 * @module Anthropic Messages as a keyed upstream API: its paths, and the version and beta headers that cross from the
 * client (its key goes as `x-api-key`, see mod.ts).
 */
import type { KeyedApi } from "./keyed.ts";

/** The `anthropic-version` sent when the client's request carries none. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

/** Messages and token counting, under the upstream's base URL. */
export const anthropic: KeyedApi = {
  name: "anthropic",
  paths: { generate: "/messages", count_tokens: "/messages/count_tokens" },
  clientHeaders(headers, client) {
    // vendorx-version and vendorx-beta are other spellings of the same headers: forwarded as sent, and standing in
    // for anthropic-version and anthropic-beta when the client sends only them.
    const vendorVersion = client.get("vendorx-version");
    const vendorBeta = client.get("vendorx-beta");
    headers.push(["anthropic-version", client.get("anthropic-version") ?? vendorVersion ?? DEFAULT_ANTHROPIC_VERSION]);
    const beta = client.get("anthropic-beta") ?? vendorBeta;
    if (beta !== null) headers.push(["anthropic-beta", beta]);
    if (vendorVersion !== null) headers.push(["vendorx-version", vendorVersion]);
    if (vendorBeta !== null) headers.push(["vendorx-beta", vendorBeta]);
  },
};
