/**
 * @module The entries of /mcp's OAuth authorization server in the app's table: its discovery documents and everything
 * under /oauth, answered only for the gateway's own host names, and loaded on first use (./routes.ts).
 */
import type { Endpoint } from "../handlers/context.ts";

/** The well-known paths of discovery (./metadata.ts lists them with their documents). */
const WELL_KNOWN = [
  "/.well-known/oauth-protected-resource/mcp",
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-authorization-server/mcp",
  "/mcp/.well-known/oauth-authorization-server",
];

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
