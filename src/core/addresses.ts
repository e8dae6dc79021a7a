/**
 * @module IP addresses as the gateway compares them: parsing IPv4 and IPv6 text, address ranges (CIDR) for
 * `trusted_proxies`, loopback names, and the key a client's address is throttled under.
 */

/** An address as 4 (IPv4) or 16 (IPv6) bytes; an IPv4-mapped IPv6 address is its IPv4 address. */
type Bytes = Uint8Array;

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseIpv4(text: string): Bytes | undefined {
  const parts = IPV4.exec(text)?.slice(1).map(Number);
  if (!parts || parts.some((part) => part > 255)) return undefined;
  return new Uint8Array(parts);
}

function parseIpv6(text: string): Bytes | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = halves.map((half) => half === "" ? [] : half.split(":"));
  const words: number[][] = [];
  for (const list of groups) {
    const out: number[] = [];
    for (const [i, group] of list.entries()) {
      // The last group may be an IPv4 address (::ffff:127.0.0.1).
      const v4 = i === list.length - 1 && group.includes(".") ? parseIpv4(group) : undefined;
      if (v4) out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      else if (/^[0-9a-f]{1,4}$/i.test(group)) out.push(parseInt(group, 16));
      else return undefined;
    }
    words.push(out);
  }
  const given = words.flat().length;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  const all = halves.length === 1 ? words[0] : [...words[0], ...Array(8 - given).fill(0), ...words[1]];
  const bytes = new Uint8Array(16);
  all.forEach((word, i) => (bytes[2 * i] = word >> 8, bytes[2 * i + 1] = word & 0xff));
  const mapped = bytes.subarray(0, 12).every((b, i) => b === (i < 10 ? 0 : 0xff));
  return mapped ? bytes.slice(12) : bytes;
}

/** An address's bytes, from its text with or without brackets or an IPv6 zone; undefined when it is not one. */
export function parseIp(text: string): Bytes | undefined {
  const bare = text.trim().replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  return bare.includes(":") ? parseIpv6(bare) : parseIpv4(bare);
}

/** The address's usual text: dotted IPv4, or IPv6 as eight hex groups (no compression; it is for logs and keys). */
export function formatIp(bytes: Bytes): string {
  if (bytes.length === 4) return bytes.join(".");
  const words = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));
  return words.join(":");
}

/** A matcher for one address or range (`10.0.0.0/8`, `fd00::/8`), or undefined when the text is neither. */
export function parseRange(text: string): ((address: Bytes) => boolean) | undefined {
  const [ip, bits, extra] = text.split("/");
  const base = parseIp(ip);
  if (!base || extra !== undefined) return undefined;
  const width = base.length * 8;
  const prefix = bits === undefined ? width : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= width)) return undefined;
  return (address) => {
    if (address.length !== base.length) return false;
    for (let bit = 0; bit < prefix; bit += 8) {
      const mask = prefix - bit >= 8 ? 0xff : (0xff << (8 - (prefix - bit))) & 0xff;
      if ((address[bit / 8] & mask) !== (base[bit / 8] & mask)) return false;
    }
    return true;
  };
}

/** True when the address text falls in one of the ranges; text that is no address matches nothing. */
export function rangesMatcher(ranges: readonly string[]): (address: string) => boolean {
  const matchers = ranges.map((range) => parseRange(range)).filter((m) => m !== undefined);
  // No ranges (no trusted proxies, the default): nothing to parse an address for, on every request.
  if (matchers.length === 0) return () => false;
  return (address) => {
    const bytes = parseIp(address);
    return bytes !== undefined && matchers.some((match) => match(bytes));
  };
}

/** True for a loopback host name or address: `localhost` (and names under it), 127.0.0.0/8, ::1. */
export function isLoopback(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  const bytes = parseIp(name);
  if (!bytes) return false;
  return bytes.length === 4 ? bytes[0] === 127 : bytes.every((b, i) => b === (i === 15 ? 1 : 0));
}

/**
 * The key a client's address is throttled under: the address itself for IPv4, its /64 for IPv6, since one
 * subscriber is usually given a whole /64 and could otherwise switch addresses at will.
 */
export function throttleKey(address: string): string {
  const bytes = parseIp(address);
  if (!bytes) return address;
  if (bytes.length === 4) return formatIp(bytes);
  const network = new Uint8Array(16);
  network.set(bytes.subarray(0, 8));
  return `${formatIp(network)}/64`;
}
