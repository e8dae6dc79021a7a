/**
 * @module The gateway's YAML config: a strict zod schema (with the limits that tokens and groups share),
 * cross-checks, and errors that name the file, the YAML path and the problem.
 */
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { BudgetSchema } from "./money.ts";
import { type UpstreamConfig, UpstreamSchema } from "./upstream_config.ts";
import { McpGrantSchema, mcpProblem, McpServerSchema, McpSettingsSchema } from "./mcp_config.ts";
import { parseRange } from "./addresses.ts";
import { problemOf } from "./validation.ts";

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

/** The roles a person signed in through the identity provider can have; see src/access/roles.ts. */
export const PERSON_ROLES = ["owner", "admin", "viewer", "member"] as const;

/** One rule of `auth.oidc.roles`: exactly one of group, email or domain, the role it gives, and a member's groups. */
const RoleRule = z.strictObject({
  /** A value of the id_token's `groups` claim, matched exactly. */
  group: z.string().min(1).optional(),
  /** A person's email, matched without regard to case. */
  email: z.string().regex(/^[^@\s]+@[^@\s]+$/, "must be an email address").transform((e) => e.toLowerCase())
    .optional(),
  /** The part of the email after its @, matched without regard to case. */
  domain: z.string().regex(/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/, "must be a domain such as example.com")
    .transform((d) => d.toLowerCase()).optional(),
  role: z.enum(PERSON_ROLES),
  /** The token groups a person matched by this rule may mint their own tokens in. */
  token_groups: z.array(z.string().min(1)).default([]),
}).refine(
  (rule) => [rule.group, rule.email, rule.domain].filter((v) => v !== undefined).length === 1,
  "must have exactly one of group, email or domain",
);

const Oidc = z.strictObject({
  /**
   * The identity provider's issuer URL, exactly as its id_tokens' `iss` says it; its metadata is read from
   * `<issuer>/.well-known/openid-configuration`.
   */
  issuer: z.url({ protocol: /^https?$/ }),
  client_id: z.string().min(1),
  /** The name of the environment variable that holds the client secret (the secret never sits in the file). */
  client_secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name"),
  /** Where the provider sends the browser back; derived from the request's host (a public one) when absent. */
  redirect_url: z.url({ protocol: /^https?$/ }).optional(),
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be a scope token")).default([
    "openid",
    "email",
    "profile",
  ]).refine((scopes) => scopes.includes("openid"), "must include openid"),
  /** Checked in order; the first rule a person matches gives their role. A person matching none is refused. */
  roles: z.array(RoleRule).min(1),
  /**
   * Only an id_token whose `email_verified` is the boolean true is taken. False: one without the claim is taken too,
   * for a provider that verifies every email it sends and does not say so (Microsoft Entra ID).
   */
  require_email_verified: z.boolean().default(true),
});

/** Tokens people make for themselves: `modelgate login`'s, and a member's own in the console or the admin API. */
const PersonalTokens = z.strictObject({
  /** Days such a token works when its maker names no expiry (a login's always); 90, or max_days when less. */
  default_days: z.number().int().min(1).max(3660).optional(),
  /** The latest expiry a member may choose, in days from the token's creation. */
  max_days: z.number().int().min(1).max(3660).default(90),
}).refine((tokens) => (tokens.default_days ?? 0) <= tokens.max_days, {
  message: "must be at most max_days",
  path: ["default_days"],
}).transform((tokens) => ({ ...tokens, default_days: tokens.default_days ?? Math.min(90, tokens.max_days) }));

const Auth = z.strictObject({
  /** Sign-in to the console through the team's OpenID Connect provider. */
  oidc: Oidc.optional(),
  personal_tokens: PersonalTokens.default(PersonalTokens.parse({})),
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

const ConfigSchema = z.strictObject({
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
  auth: Auth.default(Auth.parse({})),
  upstreams: z.array(UpstreamSchema).min(1),
  groups: z.array(Group).min(1),
  /** The team's MCP servers, served to tokens through /mcp as their group's `mcp` allows. */
  mcp_servers: z.array(McpServerSchema).default([]),
  mcp: McpSettingsSchema.default(McpSettingsSchema.parse({})),
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

/** A config that cannot be loaded; the message names the file, the YAML path and the problem. */
export class ConfigError extends Error {
  constructor(file: string, problem: string) {
    super(`Cannot load config "${file}": ${problem}`);
    this.name = "ConfigError";
  }
}

/**
 * A union's own issue says only "Invalid input"; the branch that got furthest into the value (a model entry's
 * object form, when its price is wrong) says what is wrong with it, at its full path.
 */
function deepest(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union") return issue;
  const branches = issue.errors.flatMap((branch) => branch.slice(0, 1));
  if (branches.length === 0) return issue;
  const best = branches.reduce((a, b) => b.path.length > a.path.length ? b : a);
  return deepest({ ...best, path: [...issue.path, ...best.path] });
}

/** Parses and validates config text; `file` is used only in error messages. */
export function parseConfig(text: string, file: string): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(file, `invalid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  const result = ConfigSchema.safeParse(raw ?? {});
  if (!result.success) {
    // In the admin API's words: an unknown key is named by its own path ("usage.bogus: is not a known field").
    const { field, message } = problemOf(deepest(result.error.issues[0]), raw ?? {});
    throw new ConfigError(file, `${field || "(top level)"}: ${message}`);
  }
  crossCheck(result.data, file);
  return result.data;
}

function crossCheck(config: Config, file: string): void {
  const served = new Set<string>();
  const upstreamNames = new Set<string>();
  config.upstreams.forEach((upstream, i) => {
    if (upstreamNames.has(upstream.name)) {
      throw new ConfigError(file, `upstreams[${i}].name: duplicate upstream "${upstream.name}"`);
    }
    upstreamNames.add(upstream.name);
    for (const model of upstream.models) served.add(typeof model === "string" ? model : model.id);
  });
  const groupNames = new Set<string>();
  config.groups.forEach((group, i) => {
    if (groupNames.has(group.name)) throw new ConfigError(file, `groups[${i}].name: duplicate group "${group.name}"`);
    groupNames.add(group.name);
    group.models.forEach((model, j) => {
      if (!served.has(model)) {
        throw new ConfigError(file, `groups[${i}].models[${j}]: no upstream serves model "${model}"`);
      }
    });
  });
  const mcp = mcpProblem(config.mcp_servers, config.groups);
  if (mcp) throw new ConfigError(file, mcp);
}

/** Where the config comes from: `--config`, else `MODELGATE_CONFIG`, else config/gateway.yaml, else the example. */
export function configPath(flag: string | undefined, env: (name: string) => string | undefined): string {
  if (flag) return flag;
  const fromEnv = env("MODELGATE_CONFIG");
  if (fromEnv) return fromEnv;
  try {
    Deno.statSync("config/gateway.yaml");
    return "config/gateway.yaml";
  } catch {
    return "config/gateway.example.yaml";
  }
}

/**
 * The config, from the first of: `--config PATH`, env MODELGATE_CONFIG_YAML (the whole YAML, how Deno Deploy gets
 * it), env MODELGATE_CONFIG, config/gateway.yaml, config/gateway.example.yaml. A flag on the command line is the most
 * deliberate choice, so it wins over anything the environment says.
 */
export async function loadConfigFrom(
  flag: string | undefined,
  env: (name: string) => string | undefined,
): Promise<{ config: Config; source: string }> {
  const yaml = env("MODELGATE_CONFIG_YAML");
  if (yaml && !flag) return { config: parseConfig(yaml, "$MODELGATE_CONFIG_YAML"), source: "$MODELGATE_CONFIG_YAML" };
  const file = configPath(flag, env);
  return { config: await loadConfig(file), source: file };
}

/** Reads and parses the config file. */
export async function loadConfig(file: string): Promise<Config> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    throw new ConfigError(file, (err as Error).message);
  }
  return parseConfig(text, file);
}
