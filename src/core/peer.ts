/**
 * @module Who sent a request and to which host, as far as the gateway can trust it: the connection's own address,
 * Host and scheme, or what `X-Forwarded-For`, `-Host` and `-Proto` say when the connection comes from a trusted proxy.
 */
import { isLoopback, parseIp } from "./addresses.ts";

/** The request's client as the gateway acts on it. */
export interface Peer {
  /** The client's address, or "unknown" when the connection has none (a Unix socket, a direct call in-process). */
  address: string;
  /** What the client addressed, `host[:port]` as a browser's Origin names it, lowercase. */
  authority: string;
  /** The host name alone: {@linkcode authority} without its port or IPv6 brackets. */
  hostname: string;
  /** True when the client reached the gateway over HTTPS, itself or as a trusted proxy says. */
  https: boolean;
}

/** The address of the connection a request came on, from what `Deno.serve` gives the handler. */
export function remoteAddress(info: Deno.ServeHandlerInfo | undefined): string | undefined {
  const addr = info?.remoteAddr;
  return addr && (addr.transport === "tcp" || addr.transport === "udp") ? addr.hostname : undefined;
}

/**
 * The client of `req`, which came from `remote`. Forwarded headers count only when `remote` is a trusted proxy;
 * then X-Forwarded-For is read from its right end (the entry the nearest proxy added) past every trusted proxy,
 * since entries further left were written by whoever sent the request and may be anything.
 */
export function peerOf(
  req: Request,
  remote: string | undefined,
  trusted: (address: string) => boolean,
  url: URL = new URL(req.url),
): Peer {
  let address = remote ?? "unknown";
  let authority = url.host;
  let https = url.protocol === "https:";
  if (remote !== undefined && trusted(remote)) {
    const hops = (req.headers.get("x-forwarded-for") ?? "").split(",").map((hop) => hop.trim()).reverse();
    for (const hop of hops) {
      const ip = hopAddress(hop);
      if (ip === undefined) break;
      address = ip;
      if (!trusted(ip)) break;
    }
    const host = firstValue(req.headers.get("x-forwarded-host"));
    if (host && validAuthority(host)) authority = host;
    const proto = firstValue(req.headers.get("x-forwarded-proto"))?.toLowerCase();
    if (proto === "https" || proto === "http") https = proto === "https";
  }
  authority = authority.toLowerCase();
  return { address, authority, hostname: hostnameOf(authority), https };
}

/** The first of a header's comma-separated values: what the client-facing proxy wrote, when only one is meant. */
function firstValue(value: string | null): string | undefined {
  return value?.split(",")[0].trim() || undefined;
}

/** An X-Forwarded-For entry's address (`1.2.3.4`, `1.2.3.4:5678`, `[::1]:5678`, `::1`), or undefined. */
function hopAddress(hop: string): string | undefined {
  const bare = /^\[([^\]]+)\](:\d+)?$/.exec(hop)?.[1] ?? (/^[\d.]+:\d+$/.test(hop) ? hop.split(":")[0] : hop);
  return parseIp(bare) ? bare : undefined;
}

/** A host name or address with an optional port; anything else a proxy sends is ignored. */
const AUTHORITY = /^([a-z0-9-]+(\.[a-z0-9-]+)*\.?|\[[0-9a-f:.]+\])(:\d{1,5})?$/i;

function validAuthority(host: string): boolean {
  return AUTHORITY.test(host);
}

function hostnameOf(authority: string): string {
  const bracketed = /^\[([^\]]+)\]/.exec(authority);
  return bracketed ? bracketed[1] : authority.replace(/:\d*$/, "");
}

/**
 * Whether the operator's routes (console, admin API) answer for a host name: the ones `public_hosts` lists, and
 * loopback names while the gateway listens on loopback. Any other Host is a page that was sent here by a name that
 * is not the gateway's (DNS rebinding), or a misconfigured proxy.
 */
export function publicHostRule(publicHosts: readonly string[], listenHost: string): (hostname: string) => boolean {
  const listed = new Set(publicHosts.map((host) => host.toLowerCase().replace(/\.$/, "")));
  const loopback = isLoopback(listenHost);
  return (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, "");
    return listed.has(name) || (loopback && isLoopback(name));
  };
}
