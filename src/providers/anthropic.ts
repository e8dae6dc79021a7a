/**
 * @module Transport to an upstream that speaks Anthropic Messages: its paths, its key as `x-api-key`, and the
 * version and beta headers that cross from the client.
 */

/** The `anthropic-version` sent when the client's request carries none. */
export const DEFAULT_ANTHROPIC_VERSION = "2023-06-01";

/** Messages and token counting, under the upstream's base URL. */
export const anthropic = {
  paths: { generate: "/messages", count_tokens: "/messages/count_tokens" },
  headers(headers: Headers, apiKey: string, client: Headers): void {
    headers.set("x-api-key", apiKey);
    // vendorx-version and vendorx-beta are other spellings of the same headers: forwarded as sent, and standing in
    // for anthropic-version and anthropic-beta when the client sends only them.
    const version = client.get("anthropic-version") ?? client.get("vendorx-version");
    headers.set("anthropic-version", version ?? DEFAULT_ANTHROPIC_VERSION);
    const beta = client.get("anthropic-beta") ?? client.get("vendorx-beta");
    if (beta !== null) headers.set("anthropic-beta", beta);
    for (const name of ["vendorx-version", "vendorx-beta"]) {
      const value = client.get(name);
      if (value !== null) headers.set(name, value);
    }
  },
};
