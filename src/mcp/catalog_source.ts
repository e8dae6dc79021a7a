/**
 * @module How the catalog reaches one server: on the gateway's own session with it (a shared link's one session; else
 * one opened at the first listing and kept, opened again when the server forgot it), one page at a time.
 */
import type { McpServerConfig } from "../core/mcp_config.ts";
import type { CatalogSource } from "./catalog.ts";
import { RpcError, type RpcRequest, type RpcResponse } from "./jsonrpc.ts";
import { type McpLink, SessionGone, type UpstreamSession } from "./link.ts";

/** The catalog's source for `server` over `link`. */
export function catalogSource(server: McpServerConfig, link: McpLink): CatalogSource {
  let kept: Promise<UpstreamSession> | undefined;
  const own = async (signal: AbortSignal): Promise<UpstreamSession> => {
    // A shared link keeps its session itself, and a new one after its process restarts.
    if (link.shared) return await link.open(signal);
    kept ??= link.open(signal);
    return await kept.catch((err) => {
      kept = undefined;
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
      response = await link.send(request, { session: await own(signal), signal });
    } catch (err) {
      if (!(err instanceof SessionGone) || !again) throw err;
      kept = undefined;
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
