/**
 * @module The official MCP TypeScript SDK for the tests, typed: its package maps `*.js` subpaths to types that do not
 * exist, so each import names the subpath its types are at.
 */
// @ts-types="@modelcontextprotocol/sdk/client"
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
export { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
export { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
export { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export { ElicitResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
// @ts-types="@modelcontextprotocol/sdk/client/auth"
export { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
export type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth";
