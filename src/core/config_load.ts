/**
 * @module Loading the config: where it comes from (`--config`, the environment, the default files), its YAML parsed
 * against the schema, the cross-checks the schema cannot make (names unique, every group's models served, MCP grants
 * naming real servers, no demo upstream in a production config), and errors that name the file, the YAML path and
 * the problem.
 */
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { type Config, ConfigSchema } from "./config.ts";
import { guardrailProblem } from "./guardrail_config.ts";
import { mcpProblem } from "./mcp_config.ts";
import { problemOf } from "./validation.ts";

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
    if (config.production && upstream.protocol === "demo") {
      throw new ConfigError(
        file,
        `upstreams[${i}].protocol: upstream "${upstream.name}" is the built-in demo, which a config with ` +
          "production: true refuses; remove it, and its models from the groups",
      );
    }
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
  const guardrails = guardrailProblem(config.guardrails, config.groups);
  if (guardrails) throw new ConfigError(file, guardrails);
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
