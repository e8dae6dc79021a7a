/**
 * @module The gateway's YAML config: a strict zod schema, cross-checks, and errors that name the file,
 * the YAML path and the problem.
 */
import { parse as parseYaml } from "yaml";
import { z } from "zod";

const Model = z.union([
  z.string().min(1),
  z.strictObject({
    id: z.string().min(1),
    upstream_id: z.string().min(1).optional(),
    display_name: z.string().min(1).optional(),
    created_at: z.iso.datetime().optional(),
  }),
]);

const Upstream = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be letters, digits, '_', '.' or '-'"),
  protocol: z.enum(["anthropic", "openai"]),
  base_url: z.url({ protocol: /^https?$/ }).transform((url) => url.replace(/\/+$/, "")),
  api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"),
  models: z.array(Model).min(1),
  /** Milliseconds until the upstream's response headers (and a non-streamed body) arrive. */
  timeout_ms: z.number().int().positive().default(600_000),
  /** `max_tokens` sent to an Anthropic upstream when an OpenAI client omits it. */
  default_max_tokens: z.number().int().positive().default(4096),
  /** Largest `max_tokens` the upstream's models accept; translated requests asking more are lowered to it. */
  max_output_tokens: z.number().int().positive().optional(),
});

const Group = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be letters, digits, '_', '.' or '-'"),
  listing: z.enum(["anthropic", "openai", "auto"]),
  models: z.array(z.string().min(1)),
});

const ConfigSchema = z.strictObject({
  listen: z.strictObject({
    host: z.string().min(1).default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8787),
  }).default({ host: "127.0.0.1", port: 8787 }),
  kv_path: z.string().min(1).default("data/modelgate.kv"),
  /** Largest accepted request body; Anthropic's own limit is 32 MB. */
  max_body_bytes: z.number().int().positive().default(32 * 1024 * 1024),
  upstreams: z.array(Upstream).min(1),
  groups: z.array(Group).min(1),
});

/** The validated config, with defaults applied. */
export type Config = z.infer<typeof ConfigSchema>;
/** One upstream as configured. */
export type UpstreamConfig = Config["upstreams"][number];
/** One group as configured. */
export type GroupConfig = Config["groups"][number];

/** A config that cannot be loaded; the message names the file, the YAML path and the problem. */
export class ConfigError extends Error {
  constructor(file: string, problem: string) {
    super(`Cannot load config "${file}": ${problem}`);
    this.name = "ConfigError";
  }
}

function yamlPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : `${out ? "." : ""}${String(key)}`;
  return out || "(top level)";
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
    const issue = result.error.issues[0];
    const keys = issue.code === "unrecognized_keys" ? `: ${issue.keys.map((k) => `"${k}"`).join(", ")}` : "";
    throw new ConfigError(file, `${yamlPath(issue.path)}: ${issue.message}${keys}`);
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
