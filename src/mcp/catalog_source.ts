/**
 * @module How the catalog reaches one server: on the gateway's own session with it (a stdio server's one session; an
 * HTTP server's opened at the first listing and kept, opened again when the server forgot it), one page at a time.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import type { CatalogSource } from "./catalog.ts";
import { type HttpLink, SessionGone, type UpstreamSession } from "./http_link.ts";
import { RpcError, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";
import type { StdioLink } from "./stdio_link.ts";

/** A server's link, with an HTTP server's session for listings once it is opened. */
export type Link = { kind: "http"; link: HttpLink; own?: Promise<UpstreamSession> } | {
  kind: "stdio";
  link: StdioLink;
};

/** The catalog's source for `server` over `link`. */
export function catalogSource(server: McpServerConfig, link: Link): CatalogSource {
  const own = async (signal: AbortSignal): Promise<UpstreamSession> => {
    if (link.kind === "stdio") return await link.link.session(signal);
    link.own ??= link.link.open(signal);
    return await link.own.catch((err) => {
      link.own = undefined;
      throw err;
    });
  };
  let nextId = 0;
  const page = async (method: string, cursor: string | undefined, signal: AbortSignal, again = true) => {
    const request: RpcRequest = {
      jsonrpc: "2.0",
      id: `modelgate-list-${nextId++}`,
      method,
      ...cursor ? { params: { cursor } } : {},
    };
    let response: RpcResponse;
    try {
      const session = await own(signal);
      response = link.kind === "http"
        ? await link.link.send(request, { session, signal })
        : await link.link.send(request, { signal });
    } catch (err) {
      if (!(err instanceof SessionGone) || link.kind !== "http" || !again) throw err;
      link.own = undefined;
      return await page(method, cursor, signal, false);
    }
    if (response.error) throw new RpcError(response.error.code, response.error.message);
    return response.result ?? {};
  };
  return {
    capabilities: async (signal) => (await own(signal)).capabilities,
    page,
    listTimeoutMs: server.list_timeout_ms,
  };
}
