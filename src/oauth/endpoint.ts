/**
 * @module The entries of /mcp's OAuth authorization server in the app's table: its discovery documents and everything
 * under /oauth, answered only for the gateway's own host names, and loaded on first use (./routes.ts).
 */
import type { Endpoint } from "../handlers/context.ts";
import { RESOURCE_METADATA_PATHS, SERVER_METADATA_PATHS } from "./metadata.ts";

/** The well-known paths of discovery. */
const WELL_KNOWN = [...RESOURCE_METADATA_PATHS, ...SERVER_METADATA_PATHS];

/** One entry: every method, its errors in OAuth's own shape (the handler renders them), the rest as OpenAI's. */
function entry(path: string): Endpoint {
  return {
    method: "*",
    path,
    operator: true,
    errors: () => "openai-chat",
    async handle(req, ctx) {
      const { oauthRoutes } = await import("./routes.ts");
      return await oauthRoutes(req, ctx);
    },
  };
}

/** The entries, for the app's table. */
export const OAUTH_ENDPOINTS: readonly Endpoint[] = [...WELL_KNOWN.map(entry), entry("/oauth/*")];
