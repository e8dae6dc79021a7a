/**
 * @module What the config hands the MCP servers, seen from the gateway's side: the variables a server is to get that are
 * not set (warned of at the start), and the credentials among their values, kept out of every text a client or a log
 * receives.
 */
import type { Config } from "../core/config.ts";

/** What the start warns of: a server's header or environment variable that is unset, so it is not sent. */
export function mcpWarnings(config: Config, env: (name: string) => string | undefined): string[] {
  return config.mcp_servers.flatMap((server) => {
    const named = Object.values(server.url ? server.headers ?? {} : server.env ?? {});
    return named.filter((variable) => !env(variable)).map((variable) =>
      `warning: MCP server "${server.name}" names ${variable}, which is not set; it goes without it`
    );
  });
}

/**
 * The credentials the config hands the servers: what an HTTP server's URL holds (see {@linkcode urlSecrets}), every
 * header value, the token of a `Bearer` one, and the values of a stdio server's environment long enough to be secrets (12 characters or more: a flag such as `1` or `production`
 * would otherwise be taken out of every text) unless they are file paths (`HOME`, `PATH`: taking a home folder out of
 * every text would break the answers of a server that works on files under it) under a name that does not say key,
 * token, secret, pass, credential or auth. Like the upstreams' keys, they are
 * kept out of what reaches a client or a log (see docs/mcp.md, "Configuring servers and groups").
 */
export function mcpSecrets(config: Config, env: (name: string) => string | undefined): string[] {
  const secrets: string[] = [];
  for (const server of config.mcp_servers) {
    if (server.url) secrets.push(...urlSecrets(server.url));
    for (const variable of Object.values(server.headers ?? {})) {
      const value = env(variable);
      if (!value) continue;
      secrets.push(value);
      const token = /^bearer\s+(\S+)$/i.exec(value)?.[1];
      if (token) secrets.push(token);
    }
    for (const [name, variable] of Object.entries(server.env ?? {})) {
      const value = env(variable);
      if (!value || value.length < 12) continue;
      if (SECRET_NAME.test(name) || SECRET_NAME.test(variable) || !isPathList(value)) secrets.push(value);
    }
  }
  return secrets;
}

/**
 * The credentials a server's URL may hold, as written and decoded: its userinfo's password (or its user name when it
 * has no password: a token given as the user), of 4 characters or more, and every query value of 12 or more (a shorter
 * one, such as `v=2` or `mode=ro`, would be taken out of every text).
 */
export function urlSecrets(url: string): string[] {
  const parsed = new URL(url);
  const out: string[] = [];
  const add = (raw: string, min: number) => {
    if (raw.length < min) return;
    out.push(raw);
    let decoded = raw;
    try {
      decoded = decodeURIComponent(raw.replace(/\+/g, " "));
    } catch {
      // Not valid percent-encoding: only the form written can be quoted.
    }
    if (decoded !== raw && decoded.length >= min) out.push(decoded);
  };
  add(parsed.password || parsed.username, 4);
  for (const pair of parsed.search.slice(1).split("&")) {
    if (pair.includes("=")) add(pair.slice(pair.indexOf("=") + 1), 12);
  }
  return out;
}

/** A name that says its value is a credential, whatever the value looks like. */
const SECRET_NAME = /key|token|secret|pass|credential|auth/i;

/** An absolute path, or a list of them as `PATH` holds them (`/usr/bin:/bin`, `C:\Windows;C:\Tools`). */
function isPathList(value: string): boolean {
  if (/\s/.test(value)) return false;
  const parts = value.split(value.includes(";") ? ";" : ":").filter((part) => part !== "");
  return parts.length > 0 && parts.every((part) => /^(\/|~(\/|$)|[A-Za-z]:[\\/])/.test(part));
}
