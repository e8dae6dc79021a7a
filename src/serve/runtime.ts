/**
 * @module Where the gateway runs: Deno Deploy detection, the KV location (a file, a KV Connect URL, or the
 * managed KV of `Deno.openKv()` with no path) and opening it with a message that says what to change when the process
 * may not write there, the default command on Deploy, log settings from the environment, and the address to listen on
 * (from `serve --host/--port` or the environment) with a message that says what to do when it cannot be had.
 */
import { openStore, type Store } from "../access/store.ts";
import type { LogSettings } from "../observe/log.ts";

type Env = (name: string) => string | undefined;

/**
 * True on Deno Deploy: the platform sets DENO_DEPLOY=1 in every context, and DENO_DEPLOYMENT_ID for every deployment
 * (as Deploy Classic did); see docs/operating.md, "Deno Deploy".
 */
export function onDeploy(env: Env): boolean {
  return env("DENO_DEPLOY") === "1" || Boolean(env("DENO_DEPLOYMENT_ID"));
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

/** What `serve` was told on its command line. */
export interface ServeFlags {
  config?: string;
  host?: string;
  port?: string;
}

/** An address to listen on. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * The address to listen on: `--host`/`--port`, else MODELGATE_HOST/MODELGATE_PORT, else the config's `listen`; each
 * part on its own. A port that is not a whole number from 0 to 65535, or an empty host, is an error naming where it
 * came from.
 */
export function listenAddress(fromConfig: ListenAddress, flags: ServeFlags, env: Env): ListenAddress {
  const host = flagOrEnv(flags.host, "host", env);
  const port = flagOrEnv(flags.port, "port", env);
  if (host && !/^\S+$/.test(host.text)) {
    throw new RangeError(`Cannot listen on host "${host.text}" (from ${host.from}): give an address or a host name`);
  }
  if (port && (!/^\d{1,5}$/.test(port.text) || Number(port.text) > 65_535)) {
    throw new RangeError(
      `Cannot listen on port "${port.text}" (from ${port.from}): give a whole number from 0 to 65535`,
    );
  }
  return { host: host?.text ?? fromConfig.host, port: port ? Number(port.text) : fromConfig.port };
}

/** The flag's value, else the variable MODELGATE_<NAME>'s (empty counts as unset), and where it came from. */
function flagOrEnv(flag: string | undefined, name: string, env: Env): { text: string; from: string } | undefined {
  if (flag !== undefined) return { text: flag, from: `--${name}` };
  const variable = `MODELGATE_${name.toUpperCase()}`;
  const text = env(variable);
  return text ? { text, from: `$${variable}` } : undefined;
}

/** `host:port`, with an IPv6 address in brackets. */
function addressText({ host, port }: ListenAddress): string {
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** A listen that failed; its message names the address, why, and what to do about it. */
export class ListenError extends Error {
  override name = "ListenError";
}

/** The {@linkcode ListenError} for `err`, met listening on `address`; `err` when it is one already. */
export function listenError(address: ListenAddress, err: unknown): ListenError {
  if (err instanceof ListenError) return err;
  const where = `Cannot listen on ${addressText(address)}`;
  const elsewhere = "start on another port with --port N (or MODELGATE_PORT, or listen.port in the config)";
  if (err instanceof Deno.errors.AddrInUse) {
    return new ListenError(
      `${where}: the address is already in use, by another modelgate or another program; stop it, or ` +
        elsewhere,
    );
  }
  if (err instanceof Deno.errors.PermissionDenied) {
    return new ListenError(`${where}: not permitted (ports below 1024 need privileges); ${elsewhere}`);
  }
  if (err instanceof Deno.errors.AddrNotAvailable) {
    return new ListenError(
      `${where}: no network interface of this machine has that address; listen on 127.0.0.1, 0.0.0.0 ` +
        "or one of its own addresses with --host (or MODELGATE_HOST, or listen.host in the config)",
    );
  }
  return new ListenError(`${where}: ${err instanceof Error ? err.message : String(err)}`);
}

/**
 * Fails with {@linkcode listenError} when `address` cannot be listened on now: binds it and lets it go. A gateway
 * checks before it opens anything, so a taken port stops the start at once.
 */
export function checkListen(address: ListenAddress): void {
  try {
    Deno.listen({ hostname: address.host, port: address.port }).close();
  } catch (err) {
    throw listenError(address, err);
  }
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

/** Where the KV location was set, and the setting to change: the variable, or the config's key. */
function kvOrigin(env: Env, configSource: string): { where: string; change: string } {
  return env("MODELGATE_KV")
    ? { where: "from $MODELGATE_KV", change: "MODELGATE_KV" }
    : { where: `kv_path in ${configSource}`, change: "kv_path" };
}

/** The folder a KV file lives in, as written ("." for a bare file name). */
function folderOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at === -1 ? "." : at === 0 ? "/" : path.slice(0, at);
}

/**
 * Why the KV at `path` could not be opened, as what to change. Deno's own refusal (the process was started with an
 * --allow-write that does not reach the folder) names the flag and the tasks that grant it; the system's (the user
 * running the gateway may not create or write the folder, or it is no folder) names the folder and the setting.
 */
export function kvOpenError(path: string, err: unknown, origin: { where: string; change: string }): Error {
  const folder = folderOf(path);
  const reason = err instanceof Error ? err.message : String(err);
  const head = `Cannot open KV "${path}" (${origin.where})`;
  const elsewhere = `or set ${origin.change} to a file in a folder it may write`;
  if (err instanceof Deno.errors.NotCapable) {
    return new Error(
      `${head}: this process may not write to "${folder}" (its --allow-write does not reach it); start it with ` +
        `\`deno task start\` or \`deno task cli\`, which may write there, or add --allow-write=${folder} to its deno ` +
        `run command, ${elsewhere}`,
    );
  }
  if (err instanceof Deno.errors.AlreadyExists || err instanceof Deno.errors.NotADirectory) {
    return new Error(`${head}: "${folder}" is not a folder (${reason}); ${elsewhere.slice(3)}`);
  }
  const system = err instanceof Deno.errors.PermissionDenied || err instanceof Deno.errors.NotFound ||
    /unable to open database file|readonly database|read-only file system/i.test(reason);
  if (system) {
    return new Error(
      `${head}: the user running the gateway may not create or write "${folder}" (${reason}); create that folder ` +
        `and give this user write access to it (for example: sudo install -d -o "$(id -un)" ${folder}), ${elsewhere}`,
    );
  }
  return new Error(`${head}: ${reason}`);
}

/**
 * The test seam's round trip (MODELGATE_KV_RTT_MS, for `deno task bench:kv`): every KV call then waits that long, as
 * on a remote KV. Unset (always, in production) means no wrapper at all.
 */
export function kvRttMs(env: Env): number | undefined {
  const value = env("MODELGATE_KV_RTT_MS");
  if (value === undefined || value === "") return undefined;
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms < 0 || ms > 10_000) {
    throw new Error(`MODELGATE_KV_RTT_MS must be a number of milliseconds from 0 to 10000, not "${value}"`);
  }
  return ms;
}

/** What a command still needs of the process once its KV is open: `run` to start programs (stdio MCP servers). */
export interface ProcessNeeds {
  run?: boolean;
}

/** What {@linkcode openKvStore} needs of the process. */
export interface KvOpenIo {
  env: Env;
  /** Runs once the KV is open; the process entry point drops its write (and, unless `needs.run`, run) permission there. */
  onKvOpen?(needs?: ProcessNeeds): void;
  /** Where the store logs (a KV file's mode tightened, a write given up). */
  log?(line: Record<string, unknown>): void;
}

/** Opens the configured KV; a location the process may not write stops the command with {@linkcode kvOpenError}. */
export async function openKvStore(kvPath: string, configSource: string, io: KvOpenIo): Promise<Store> {
  const location = kvLocation(kvPath, io.env);
  let store: Store;
  try {
    store = await openStore(location, { log: io.log, rttMs: kvRttMs(io.env) });
  } catch (err) {
    if (location === undefined || location === ":memory:" || location.includes("://")) throw err;
    throw kvOpenError(location, err, kvOrigin(io.env, configSource));
  }
  io.onKvOpen?.();
  if (store.kvCalls) {
    io.log?.({ level: "warn", event: "kv_delay_on", rtt_ms: kvRttMs(io.env), note: "test seam: never in production" });
  }
  return store;
}

/**
 * Gives up the process's permission to write files, once its KV is open: the open KV goes on writing (Deno checks a
 * file's permission when it is opened, not at every write), and from then on nothing else in the process can write a
 * file, whatever --allow-write it was started with. Where there are no permissions to drop (Deno Deploy), nothing
 * happens.
 */
export function dropWritePermission(): void {
  try {
    Deno.permissions.revokeSync({ name: "write" });
  } catch {
    // No permission API here: there is no file system to protect either.
  }
}

/**
 * Gives up the permission to start programs, with the KV open: only `modelgate run` starts one, and it opens no KV,
 * so a gateway or an operator's command started with the CLI's permissions never can.
 */
export function dropRunPermission(): void {
  try {
    Deno.permissions.revokeSync({ name: "run" });
  } catch {
    // No permission API here: there are no programs to start either.
  }
}
