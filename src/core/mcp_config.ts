/**
 * @module The config of the team's MCP servers: `mcp_servers` (a Streamable HTTP server by `url`, or a stdio server the
 * gateway starts by `command`), a group's `mcp` grant of what its tokens may use, and the `mcp` section's settings.
 * Secrets never sit in the file: headers and environment values name environment variables.
 */
import { z } from "zod";

/** A server's name: short, lowercase, no '_' (the gateway's tool names put one between the server and the tool). */
export const SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,23}$/;

const ServerName = z.string().regex(SERVER_NAME, "must be 1 to 24 lowercase letters, digits or '-'");
export const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name");
export const HeaderName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, "must be an HTTP header name");

/** The headers the gateway sets itself on every call to a server; a config may not replace them. */
const OWN_HEADERS = new Set([
  "accept",
  "content-type",
  "content-length",
  "host",
  "mcp-session-id",
  "mcp-protocol-version",
  "connection",
  "transfer-encoding",
]);

const McpServerBase = z.strictObject({
  name: ServerName,
  /** A Streamable HTTP server's endpoint. */
  url: z.url({ protocol: /^https?$/ }).optional(),
  /** Headers sent to a `url` server, each value read from the environment variable named: `{ Authorization: ENV }`. */
  headers: z.record(HeaderName, EnvName).optional(),
  /** A stdio server the gateway starts: the program and its arguments. */
  command: z.array(z.string().min(1)).min(1).optional(),
  /** The only environment a `command` server gets: `{ NAME: ENV }` gives it NAME with the gateway's value of ENV. */
  env: z.record(EnvName, EnvName).optional(),
  /** The folder a `command` server starts in; the gateway's own by default. */
  cwd: z.string().min(1).optional(),
  /** Longest wait for the answer to one call (tools/call, prompts/get, resources/read). */
  timeout_ms: z.number().int().min(100).max(3_600_000).default(60_000),
  /** Longest wait for a listing (tools, prompts, resources) or for a session to open. */
  list_timeout_ms: z.number().int().min(100).max(600_000).default(10_000),
  /** Largest answer taken from the server for one request; a larger one is refused with an error. */
  max_answer_bytes: z.number().int().min(1024).max(256 * 1024 * 1024).default(4 * 1024 * 1024),
});

/** One MCP server as configured: exactly one of `url` or `command`. */
export const McpServerSchema = McpServerBase.superRefine((server, ctx) => {
  if ((server.url === undefined) === (server.command === undefined)) {
    ctx.addIssue({ code: "custom", message: "must have exactly one of url or command", path: [] });
  }
  if (server.headers && server.url === undefined) {
    ctx.addIssue({ code: "custom", message: "is only for a server with a url", path: ["headers"] });
  }
  for (const key of ["env", "cwd"] as const) {
    if (server[key] !== undefined && server.command === undefined) {
      ctx.addIssue({ code: "custom", message: "is only for a server with a command", path: [key] });
    }
  }
  for (const name of Object.keys(server.headers ?? {})) {
    if (OWN_HEADERS.has(name.toLowerCase())) {
      ctx.addIssue({ code: "custom", message: "is set by the gateway itself", path: ["headers", name] });
    }
  }
});

/** One MCP server as configured. */
export type McpServerConfig = z.infer<typeof McpServerSchema>;

/** "*" for everything of a kind, or the names (tools, prompts) or URIs (resources; a trailing `*` matches a prefix). */
const Allowed = z.union([z.literal("*"), z.array(z.string().min(1))]);

/**
 * What a group may use of one server: "*" (everything), a list of tool names (those tools only), or each kind apart:
 * `{ tools, prompts, resources }` (a kind left out is none).
 */
const Grant = z.union([
  z.literal("*"),
  z.array(z.string().min(1)),
  z.strictObject({ tools: Allowed.optional(), prompts: Allowed.optional(), resources: Allowed.optional() }),
]);

/** A group's `mcp`: per server name, what its tokens may use. A group without it sees no MCP server. */
export const McpGrantSchema = z.record(ServerName, Grant);

/** A group's `mcp` as configured. */
export type McpGrant = z.infer<typeof McpGrantSchema>;

/** The `mcp` section: how the /mcp endpoint keeps sessions and names things. */
export const McpSettingsSchema = z.strictObject({
  /** A client's session ends after this long without a request, and the sessions it opened with servers with it. */
  session_idle_ms: z.number().int().min(60_000).max(30 * 86_400_000).default(86_400_000),
  /** The most sessions one token keeps open; opening one more ends its oldest. */
  max_sessions_per_token: z.number().int().min(1).max(10_000).default(100),
  /** The most JSON one page of a merged listing holds (nextCursor leads on). */
  list_page_bytes: z.number().int().min(4096).max(64 * 1024 * 1024).default(1024 * 1024),
  /** How long a server's listing (tools, prompts, resources) is reused before it is asked again. */
  list_ttl_ms: z.number().int().min(0).max(86_400_000).default(60_000),
  /**
   * The longest name the gateway gives a tool or prompt. Claude Code refuses names over 64 characters including its
   * own `mcp__<name>__` prefix: 48 leaves room for a client that calls the gateway `modelgate`.
   */
  name_max_length: z.number().int().min(16).max(128).default(48),
});

/** The `mcp` section as configured. */
export type McpSettings = z.infer<typeof McpSettingsSchema>;

/** A problem with the MCP parts of a config as a whole (a duplicate server, a grant of an unknown one), or undefined. */
export function mcpProblem(
  servers: readonly McpServerConfig[],
  groups: readonly { name: string; mcp?: McpGrant }[],
): string | undefined {
  const names = new Set<string>();
  for (const [i, server] of servers.entries()) {
    if (names.has(server.name)) return `mcp_servers[${i}].name: duplicate MCP server "${server.name}"`;
    names.add(server.name);
  }
  for (const [i, group] of groups.entries()) {
    for (const name of Object.keys(group.mcp ?? {})) {
      if (!names.has(name)) return `groups[${i}].mcp.${name}: no MCP server "${name}" in mcp_servers`;
    }
  }
  return undefined;
}
