/**
 * @module The names the gateway gives what it merges from several servers, and a group's grant: a tool or prompt is
 * `<server>_<name>` (a server's name has no '_', so the first one splits them), shortened with a hash when too long or
 * not made of the characters every client takes; a resource's URI is `mcp+<server>:<uri>`. See docs/mcp.md, "Names".
 */
import type { McpGrant } from "../core/mcp_config.ts";

/** The kinds of thing a server offers and a grant names. */
export type Kind = "tools" | "prompts" | "resources";

/** The characters a tool's name may have for the Anthropic and OpenAI APIs alike. */
const PLAIN = /^[A-Za-z0-9_-]+$/;

/** FNV-1a, 32 bits, as 8 hex digits: a short, stable tag that keeps two shortened names apart. */
function tag(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** True when `name` of `server` is shown as it is, `<server>_<name>`: short enough and of plain characters only. */
function isPlain(server: string, name: string, maxLength: number): boolean {
  return server.length + 1 + name.length <= maxLength && PLAIN.test(name);
}

/** `<server>_<the name's start, other characters as '_'>_<8 hex digits>`: the tag hashes the name (and `salt`). */
function shortened(server: string, name: string, maxLength: number, salt = 0): string {
  const room = Math.max(0, maxLength - server.length - 10);
  const head = name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, room);
  return `${server}_${head}_${tag(salt === 0 ? name : `${name}\u0000${salt}`)}`;
}

/**
 * The name a client sees for tool or prompt `name` of `server`: `<server>_<name>` when that fits `maxLength` and has only
 * letters, digits, '_' and '-'; else `<server>_<the name's start, other characters as '_'>_<8 hex digits of its hash>`.
 * Within one server's listing {@linkcode nameTable} makes them unique.
 */
export function exposedName(server: string, name: string, maxLength: number): string {
  return isPlain(server, name, maxLength) ? `${server}_${name}` : shortened(server, name, maxLength);
}

/** The names one server's tools (or prompts) are listed under, both ways. */
export interface NameTable {
  /** Per own name, the name a client sees. */
  exposed: ReadonlyMap<string, string>;
  /** Per name a client sees, the server's own. */
  own: ReadonlyMap<string, string>;
}

/**
 * The names of `names` (one server's, in its listing's order) as {@linkcode exposedName} gives them, made unique: a
 * plain name keeps its own, and a shortened one that would be taken (by a plain name that happens to read the same, or
 * by another shortened one) gets its tag from its name and a count instead. A name listed twice is listed once.
 */
export function nameTable(server: string, names: Iterable<string>, maxLength: number): NameTable {
  const own = [...new Set(names)];
  const exposed = new Map<string, string>();
  const taken = new Map<string, string>();
  const give = (name: string, as: string) => void (exposed.set(name, as), taken.set(as, name));
  for (const name of own) if (isPlain(server, name, maxLength)) give(name, `${server}_${name}`);
  for (const name of own) {
    if (exposed.has(name)) continue;
    let as = shortened(server, name, maxLength);
    for (let salt = 1; taken.has(as); salt++) as = shortened(server, name, maxLength, salt);
    give(name, as);
  }
  return { exposed, own: taken };
}

/** The server part of an exposed tool or prompt name, or undefined when it has none. */
export function serverOf(exposed: string): string | undefined {
  const split = exposed.indexOf("_");
  return split > 0 ? exposed.slice(0, split) : undefined;
}

/** The URI a client sees for resource `uri` of `server`. */
export function exposedUri(server: string, uri: string): string {
  return `mcp+${server}:${uri}`;
}

/** The server and its own URI behind an exposed one, or undefined when `uri` is not one of the gateway's. */
export function originalUri(uri: string): { server: string; uri: string } | undefined {
  const match = /^mcp\+([a-z0-9][a-z0-9-]*):(.+)$/s.exec(uri);
  return match ? { server: match[1], uri: match[2] } : undefined;
}

/** The servers a grant names, in its order. */
export function grantedServers(grant: McpGrant | undefined): string[] {
  return Object.keys(grant ?? {});
}

/** What of `kind` a grant gives on `server`: "*", a list, or nothing. */
function allowance(grant: McpGrant | undefined, server: string, kind: Kind): "*" | readonly string[] {
  const given = grant?.[server];
  if (given === undefined) return [];
  if (given === "*") return "*";
  if (Array.isArray(given)) return kind === "tools" ? given : [];
  return given[kind] ?? [];
}

/**
 * True when the grant lets its group use `name` (a tool's or prompt's own name, or a resource's own URI) of `server`.
 * A resource entry ending in `*` allows every URI that starts with what comes before it.
 */
export function allows(grant: McpGrant | undefined, server: string, kind: Kind, name: string): boolean {
  const allowed = allowance(grant, server, kind);
  if (allowed === "*") return true;
  return allowed.some((entry) =>
    kind === "resources" && entry.endsWith("*")
      ? name.startsWith(entry.slice(0, -1)) && !leavesPrefix(name)
      : entry === name
  );
}

/**
 * True when a server could read `uri` as another URI than it spells, one outside a prefix it starts with: a `.` or `..`
 * segment (between `/` or `\`), or a `.`, `/` or `\` percent-encoded (once, or again as `%25...`). Such a URI matches no
 * prefix grant (see docs/mcp.md, "Configuring servers and groups").
 */
export function leavesPrefix(uri: string): boolean {
  return /(?:^|[/\\])\.{1,2}(?:[/\\?#]|$)/.test(uri) || /%(?:25)*(?:2e|2f|5c)/i.test(uri);
}

/** True when the grant gives everything of `kind` on `server` (resource templates are listed only then). */
export function allowsAll(grant: McpGrant | undefined, server: string, kind: Kind): boolean {
  return allowance(grant, server, kind) === "*";
}
