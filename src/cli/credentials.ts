/**
 * @module A person's login on this machine: where it is kept ($XDG_CONFIG_HOME/modelgate/, else ~/.config/modelgate/),
 * written atomically and readable by its owner only, read back, and forgotten.
 */
import { z } from "zod";

type Env = (name: string) => string | undefined;

/** What `modelgate login` keeps: the gateway and the personal token it gave. */
export interface Credentials {
  /** The gateway's root URL, without a trailing slash. */
  gateway: string;
  /** The sk- secret. */
  token: string;
  token_id: string;
  owner: string;
  group: string;
  expires_at: string | null;
}

const CredentialsFile = z.object({
  gateway: z.url(),
  token: z.string().min(1),
  token_id: z.string(),
  owner: z.string(),
  group: z.string(),
  expires_at: z.string().nullable(),
});

/** An absolute path, on Unix or Windows. */
function absolute(path: string): boolean {
  return /^([A-Za-z]:)?[\\/]/.test(path);
}

/**
 * The credentials file. A relative XDG_CONFIG_HOME is ignored, as the XDG base directory rules ask; without HOME
 * (Windows has USERPROFILE) there is nowhere to keep it.
 */
export function credentialsPath(env: Env): string {
  const xdg = env("XDG_CONFIG_HOME");
  const home = env("HOME") || env("USERPROFILE");
  const base = xdg && absolute(xdg) ? xdg : home ? `${home}/.config` : undefined;
  if (!base) throw new Error("Cannot tell where to keep the login: set HOME or XDG_CONFIG_HOME");
  return `${base}/modelgate/credentials.json`;
}

/** The saved login, or undefined when there is none. A file that is not one is an error naming it. */
export async function readCredentials(path: string): Promise<Credentials | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const result = CredentialsFile.safeParse(parsed);
  if (!result.success) {
    throw new Error(`${path} is not a modelgate login; delete it and run modelgate login --gateway URL again`);
  }
  return result.data;
}

/**
 * Saves the login. The file is written beside its final name with mode 0600 and then renamed over it, so a reader
 * never sees half a file and the secret is never readable by others, not even for a moment.
 */
export async function writeCredentials(path: string, credentials: Credentials): Promise<void> {
  const folder = path.slice(0, path.lastIndexOf("/"));
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const suffix = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0"));
  const temporary = `${path}.${suffix.join("")}.tmp`;
  try {
    await Deno.writeTextFile(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, createNew: true });
    // A umask can only take bits away from 0600, but a file system may give its own; the mode is made sure of.
    if (Deno.build.os !== "windows") await Deno.chmod(temporary, 0o600);
    await Deno.rename(temporary, path);
  } catch (err) {
    await Deno.remove(temporary).catch(() => {});
    throw err;
  }
}

/** Forgets the login; true when there was one. */
export async function deleteCredentials(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
