/**
 * @module The gateway's config as a strict zod schema, its defaults and its types, with the limits that tokens and
 * groups share; its larger sections have files of their own (upstream_config.ts, auth_config.ts, mcp_config.ts), and
 * config_load.ts reads it.
 */
import { z } from "zod";
import { BudgetSchema } from "./money.ts";
import { sameKinds, type UpstreamConfig, UpstreamSchema } from "./upstream_config.ts";
import { AuthSchema } from "./auth_config.ts";
import { McpGrantSchema, McpServerSchema, McpSettingsSchema } from "./mcp_config.ts";
import { parseRange } from "./addresses.ts";
import { BatchesSchema } from "./batch_config.ts";
import { GuardrailSchema } from "./guardrail_config.ts";

const Positive = z.number().int().positive();

/** Optional caps on a token or a group; an absent field means no cap. The admin API checks them the same way. */
export const LimitsSchema = z.strictObject({
  requests_per_minute: Positive.optional(),
  tokens_per_minute: Positive.optional(),
  tokens_per_day: Positive.optional(),
  tokens_per_month: Positive.optional(),
  /** Spend in the config's currency per UTC day and month, priced as each request's deployment charges. */
  cost_per_day: BudgetSchema.optional(),
  cost_per_month: BudgetSchema.optional(),
  /** Calls of MCP tools (tools/call through /mcp) per UTC minute. */
  tool_calls_per_minute: Positive.optional(),
  /** Requests to /mcp of every kind (sessions, listings, calls, notifications) per UTC minute. */
  mcp_requests_per_minute: Positive.optional(),
});

/** Limits as stored on a token or a group. */
export type Limits = z.infer<typeof LimitsSchema>;

const Group = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be letters, digits, '_', '.' or '-'"),
  listing: z.enum(["anthropic", "openai", "auto"]),
  models: z.array(z.string().min(1)),
  limits: LimitsSchema.optional(),
  /** The MCP servers (and their tools, prompts and resources) the group's tokens may use through /mcp. */
  mcp: McpGrantSchema.optional(),
  /** The `guardrails` rules applied to the group's requests and tool calls, in order. */
  guardrails: z.array(z.string()).optional(),
});

const Usage = z.strictObject({
  /** Days the request log keeps each request (KV expireIn); aggregates are kept for good. */
  request_log_days: z.number().int().min(1).max(366).default(30),
  /** How often batched usage is written to KV; a crash loses at most this much. */
  flush_ms: z.number().int().min(50).max(60_000).default(1000),
  /** How often an instance checks KV for token and group changes made elsewhere. */
  auth_refresh_ms: z.number().int().min(50).max(60_000).default(500),
});

const LimitShares = z.strictObject({
  /** A share of a limit not topped up for this long goes back to KV; one held by an instance that died is lost. */
  lease_ms: z.number().int().min(1000).max(600_000).default(10_000),
  /** How much of an instance's recent traffic a share is sized for. */
  horizon_ms: z.number().int().min(100).max(600_000).default(5_000),
  /** How often usage beyond the shares is written to KV and expired shares are given back. */
  sweep_ms: z.number().int().min(50).max(60_000).default(1000),
});

const ResponsesStore = z.strictObject({
  /** Keeps Responses answers (store: true, the API's default) so previous_response_id and item_reference work. */
  enabled: z.boolean().default(true),
  /** Days a stored response is kept (KV expireIn); a conversation lasts as long as its first response. */
  days: z.number().int().min(1).max(366).default(30),
  /**
   * The most stored responses one `previous_response_id` continues: each continuation reads and replays them all, so a
   * chain past it is refused (400) and the client sends the conversation in input, which starts a new chain. At most
   * 1000, so a response's list of the ids it continues fits one KV value.
   */
  max_chain_turns: z.number().int().min(1).max(1000).default(100),
});

const Console = z.strictObject({
  /** A console session ends this long after signing in, however busy (absolute lifetime). */
  session_max_ms: z.number().int().min(60_000).max(30 * 86_400_000).default(12 * 3_600_000),
  /** ...and this long after its last page (idle lifetime). */
  session_idle_ms: z.number().int().min(60_000).max(30 * 86_400_000).default(3_600_000),
});

const Audit = z.strictObject({
  /** Days each audit record is kept (KV expireIn); the trail of changes made through the admin API, console or CLI. */
  days: z.number().int().min(1).max(3660).default(365),
});

const ResponsesSocket = z.strictObject({
  /** Serves `GET /v1/responses` with `Upgrade: websocket` (the Responses API's WebSocket mode). */
  enabled: z.boolean().default(true),
  /** A socket with no response running and no message from its client for this long is closed. */
  idle_timeout_ms: z.number().int().min(100).default(10 * 60_000),
  /** A socket is closed this long after it opened, once its responses have finished (OpenAI closes at 60 min). */
  max_age_ms: z.number().int().min(100).default(60 * 60_000),
  /** Sockets one token may hold open on this instance at once; another is refused with a 429. */
  max_per_token: z.number().int().min(1).default(16),
  /** Responses one socket may have running or waiting at once, over all its streams. */
  max_pending: z.number().int().min(1).max(256).default(8),
  /** Bytes of completed responses one socket keeps in memory for `previous_response_id` with `store: false`. */
  memory_bytes: z.number().int().min(1024).default(16 * 1024 * 1024),
  /** Bytes all sockets of the process keep in memory together; a response past them is not kept. */
  total_memory_bytes: z.number().int().min(1024).default(256 * 1024 * 1024),
});

const RetryBudget = z.strictObject({
  /** Retries to one deployment per request it got in the window (0.2: one retry per five requests). */
  ratio: z.number().min(0).max(10).default(0.2),
  /** Retries to one deployment allowed in the window however few requests it got. */
  min_retries: z.number().int().min(0).default(3),
  /** The sliding window the counts are kept over. */
  window_ms: z.number().int().min(1000).max(600_000).default(10_000),
});

const Affinity = z.strictObject({
  /** Sends a session to the deployment that served it last, while that one is healthy, so its prompt cache is read. */
  enabled: z.boolean().default(true),
  /** A pin's life after its session's last request, unless the request's cache asks for longer (1 h, 24 h). */
  ttl_ms: z.number().int().min(1000).max(86_400_000).default(300_000),
  /** How often an instance checks a pin in use against KV, in the background, to learn of a move made elsewhere. */
  sync_ms: z.number().int().min(100).max(600_000).default(10_000),
});

const Routing = z.strictObject({
  /** Upstream attempts per request, failovers included. */
  max_attempts: z.number().int().min(1).max(10).default(3),
  /** Time budget for all attempts before the first byte reaches the client. */
  deadline_ms: z.number().int().positive().default(600_000),
  /** Failing requests in a row that make a deployment (or, for connection failures, an upstream) cool down. */
  failure_threshold: z.number().int().positive().default(3),
  /** First cooldown; it doubles on each repeated trip up to `max_cooldown_ms`. */
  cooldown_ms: z.number().int().positive().default(10_000),
  max_cooldown_ms: z.number().int().positive().default(300_000),
  /** Limits the gateway's own retries to the same deployment; moving on to another deployment is not limited. */
  retry_budget: RetryBudget.default(RetryBudget.parse({})),
  /** Prompt-cache affinity among a model's deployments of one priority. */
  affinity: Affinity.default(Affinity.parse({})),
});

const Log = z.strictObject({
  level: z.enum(["debug", "info", "warn", "error"]).default("info"),
  /** `json` for machines; `pretty` for a terminal (`deno task dev` sets it through MODELGATE_LOG_FORMAT). */
  format: z.enum(["json", "pretty"]).default("json"),
});

const Metrics = z.strictObject({
  /** When true, `GET /metrics` needs the admin key (env MODELGATE_ADMIN_KEY) as a bearer token. */
  require_admin_key: z.boolean().default(false),
});

/** The whole config file. */
export const ConfigSchema = z.strictObject({
  /** The operator's word that this config serves real traffic: the start then refuses the demo upstream. */
  production: z.boolean().default(false),
  listen: z.strictObject({
    host: z.string().min(1).default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8787),
  }).default({ host: "127.0.0.1", port: 8787 }),
  /**
   * The host names the console and the admin API answer for (the Host a browser or client sends, without its
   * port); loopback names are always allowed while `listen.host` is a loopback address.
   */
  public_hosts: z.array(
    z.string().regex(/^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?|[0-9A-Fa-f:.]+)$/, "must be a host name or an address"),
  ).default([]),
  /** Addresses or ranges (CIDR) of the proxies whose X-Forwarded-For, -Host and -Proto headers are believed. */
  trusted_proxies: z.array(
    z.string().refine((text) => parseRange(text) !== undefined, "must be an address or a range such as 10.0.0.0/8"),
  ).default([]),
  /** A file, ":memory:", a KV Connect URL, or "managed" for `Deno.openKv()` with no path (Deno Deploy). */
  kv_path: z.string().min(1).default("data/modelgate.kv"),
  /** The label of every price, cost and budget; amounts are never converted between currencies. */
  currency: z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,15}$/, "must be a short label such as USD or EUR")
    .default("USD"),
  /** Largest accepted request body; Anthropic's own limit is 32 MB. */
  max_body_bytes: z.number().int().positive().default(32 * 1024 * 1024),
  /** Request-body bytes all requests in flight may hold; a large body past it waits briefly, then gets 503. */
  max_inflight_body_bytes: z.number().int().positive().default(256 * 1024 * 1024),
  /** A request body that stops arriving for this long is answered 408. */
  body_idle_timeout_ms: z.number().int().positive().default(30_000),
  /** Silence toward a client of a translated stream before the gateway sends a keep-alive. */
  stream_keepalive_ms: z.number().int().positive().default(15_000),
  /** How long in-flight requests and streams may run on after SIGINT/SIGTERM. */
  shutdown_grace_ms: z.number().int().min(0).default(30_000),
  routing: Routing.default(Routing.parse({})),
  log: Log.default(Log.parse({})),
  metrics: Metrics.default(Metrics.parse({})),
  usage: Usage.default(Usage.parse({})),
  limit_shares: LimitShares.default(LimitShares.parse({})),
  responses_store: ResponsesStore.default(ResponsesStore.parse({})),
  responses_socket: ResponsesSocket.default(ResponsesSocket.parse({})),
  audit: Audit.default(Audit.parse({})),
  console: Console.default(Console.parse({})),
  auth: AuthSchema.default(AuthSchema.parse({})),
  upstreams: z.array(UpstreamSchema).min(1).superRefine(sameKinds),
  groups: z.array(Group).min(1),
  /** The team's MCP servers, served to tokens through /mcp as their group's `mcp` allows. */
  mcp_servers: z.array(McpServerSchema).default([]),
  mcp: McpSettingsSchema.default(McpSettingsSchema.parse({})),
  batches: BatchesSchema.default(BatchesSchema.parse({})),
  /** Rules that keep secrets and personal data from leaving, named by the groups they apply to (see guardrails.md). */
  guardrails: z.array(GuardrailSchema).default([]),
});

/** The validated config, with defaults applied. */
export type Config = z.infer<typeof ConfigSchema>;
/** One upstream as configured. */
export type { UpstreamConfig };
/** The identity provider's settings, when sign-in through one is on. */
export type OidcConfig = NonNullable<Config["auth"]["oidc"]>;
/** One rule of `auth.oidc.roles`. */
export type RoleRule = OidcConfig["roles"][number];
/** One group as configured. */
export type GroupConfig = Config["groups"][number];

/** One MCP server as configured. */
export type { McpServerConfig } from "./mcp_config.ts";
