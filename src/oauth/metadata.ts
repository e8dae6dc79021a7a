/**
 * @module The discovery documents of /mcp's OAuth: the protected resource metadata of /mcp (RFC 9728) and the
 * authorization server metadata (RFC 8414), under every path clients fetch them at (docs/mcp.md, "Discovery").
 */
import { mcpResource } from "../access/oauth_rules.ts";

/** The paths the protected resource metadata is served at: the path-inserted form for /mcp, and the root. */
export const RESOURCE_METADATA_PATHS = [
  "/.well-known/oauth-protected-resource/mcp",
  "/.well-known/oauth-protected-resource",
];

/**
 * The paths the authorization server metadata is served at: the root (the issuer is the gateway's base URL, and some
 * clients fetch only this), and, for clients that take /mcp itself for the issuer, the path-inserted form of RFC 8414
 * and the path-appended one.
 */
export const SERVER_METADATA_PATHS = [
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-authorization-server/mcp",
  "/mcp/.well-known/oauth-authorization-server",
];

/** RFC 9728 metadata of /mcp at `base`. */
export function resourceMetadata(base: string) {
  return {
    resource: mcpResource(base),
    authorization_servers: [base],
    bearer_methods_supported: ["header"],
    resource_name: "modelgate MCP",
  };
}

/** RFC 8414 metadata of the authorization server at `base`. */
export function serverMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}
