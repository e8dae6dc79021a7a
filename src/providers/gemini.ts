/**
 * @module Transport to the Gemini API: the model and the method in the path (`:generateContent`,
 * `:streamGenerateContent?alt=sse`, `:countTokens`, `:batchEmbedContents`), the key as `x-goog-api-key`. No client header crosses, and the
 * client's query string (which may hold the client's own key) never does.
 */
import type { JsonObject } from "../core/types.ts";
import type { Transport, TransportCall } from "./transport.ts";

/** Where one call goes and what it carries. */
export function geminiRequest(
  baseUrl: string,
  call: Pick<TransportCall, "operation" | "upstreamModel" | "body" | "requestId">,
  /** Vertex's countTokens takes the request's fields themselves; the Gemini API's takes them wrapped. */
  countWrapped = true,
): { url: string; body: JsonObject } {
  const { model: _model, stream, ...rest } = call.body;
  const resource = `${baseUrl}/models/${encodeURIComponent(call.upstreamModel)}`;
  // An embeddings body is already batchEmbedContents' own (see translate/embeddings_request.ts).
  if (call.operation === "embed") return { url: `${resource}:batchEmbedContents`, body: rest };
  if (call.operation === "count_tokens" && !countWrapped) return { url: `${resource}:countTokens`, body: rest };
  if (call.operation === "count_tokens") {
    // countTokens takes the whole request (so tools and the system instruction count) under generateContentRequest.
    return {
      url: `${resource}:countTokens`,
      body: { generateContentRequest: { model: `models/${call.upstreamModel}`, ...rest } },
    };
  }
  const method = stream === true ? "streamGenerateContent?alt=sse" : "generateContent";
  return { url: `${resource}:${method}`, body: rest };
}

/** The transport of a Gemini API upstream. */
export function geminiTransport(
  target: { baseUrl: string; apiKey: string },
  fetch: typeof globalThis.fetch,
): Transport {
  return {
    async send(call) {
      const { url, body } = geminiRequest(target.baseUrl, call);
      return await fetch(url, {
        method: "POST",
        headers: [["content-type", "application/json"], ["x-goog-api-key", target.apiKey], [
          "x-request-id",
          call.requestId,
        ]],
        body: JSON.stringify(body),
        signal: call.signal,
      });
    },
    secrets: () => [target.apiKey],
  };
}
