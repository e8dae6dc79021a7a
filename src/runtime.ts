/**
 * @module Where the gateway runs: Deno Deploy detection, the KV location (a file, a KV Connect URL, or the
 * managed KV of `Deno.openKv()` with no path), the default command there, and log settings from the environment.
 */
import type { LogSettings } from "./observe/log.ts";

type Env = (name: string) => string | undefined;

/** True on Deno Deploy, which sets DENO_DEPLOYMENT_ID for every deployment. */
export function onDeploy(env: Env): boolean {
  return Boolean(env("DENO_DEPLOYMENT_ID"));
}

/**
 * The KV to open: env MODELGATE_KV wins (a shared file or a KV Connect URL); on Deploy, or when `kv_path` is
 * "managed", undefined stands for `Deno.openKv()` with no path; else the config's `kv_path`.
 */
export function kvLocation(kvPath: string, env: Env): string | undefined {
  const fromEnv = env("MODELGATE_KV");
  if (fromEnv) return fromEnv;
  if (onDeploy(env) || kvPath === "managed") return undefined;
  return kvPath;
}

/** Deploy starts the entry point with no arguments; there it means `serve`. */
export function defaultArgs(argv: readonly string[], env: Env): string[] {
  return argv.length === 0 && onDeploy(env) ? ["serve"] : [...argv];
}

/** The config's log settings, overridden by MODELGATE_LOG_LEVEL / MODELGATE_LOG_FORMAT when they hold a valid value. */
export function logSettings(fromConfig: LogSettings, env: Env): LogSettings {
  const level = env("MODELGATE_LOG_LEVEL");
  const format = env("MODELGATE_LOG_FORMAT");
  return {
    level: level === "debug" || level === "info" || level === "warn" || level === "error" ? level : fromConfig.level,
    format: format === "json" || format === "pretty" ? format : fromConfig.format,
  };
}
