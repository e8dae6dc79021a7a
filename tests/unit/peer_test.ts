/** @module Addresses, ranges and the trusted view of a request's client: who sent it, to which host, over what. */
import assert from "node:assert/strict";
import { formatIp, isLoopback, parseIp, rangesMatcher, throttleKey } from "../../src/core/addresses.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { peerOf, publicHostRule } from "../../src/core/peer.ts";
import { publicHostsWarning } from "../../src/serve/server.ts";

const PARSED = [
  { text: "127.0.0.1", want: "127.0.0.1" },
  { text: "::1", want: "0:0:0:0:0:0:0:1" },
  { text: "[2001:db8::7]", want: "2001:db8:0:0:0:0:0:7" },
  { text: "fe80::1%eth0", want: "fe80:0:0:0:0:0:0:1" },
  { text: "::ffff:10.1.2.3", want: "10.1.2.3" },
  { text: "256.0.0.1", want: undefined },
  { text: "1.2.3", want: undefined },
  { text: "1::2::3", want: undefined },
  { text: "1:2:3:4:5:6:7:8:9", want: undefined },
  { text: "gw.example.com", want: undefined },
];
for (const c of PARSED) {
  Deno.test(`parseIp() reads ${c.text} as ${c.want ?? "no address"}`, () => {
    const bytes = parseIp(c.text);
    assert.equal(bytes && formatIp(bytes), c.want);
  });
}

Deno.test("rangesMatcher() matches single addresses and CIDR ranges of either family", () => {
  const trusted = rangesMatcher(["10.0.0.0/8", "192.168.1.7", "fd00::/8"]);
  assert.equal(trusted("10.200.3.4"), true);
  assert.equal(trusted("11.0.0.1"), false);
  assert.equal(trusted("192.168.1.7"), true);
  assert.equal(trusted("192.168.1.8"), false);
  assert.equal(trusted("fd12::1"), true);
  assert.equal(trusted("fe12::1"), false);
  assert.equal(trusted("::ffff:10.0.0.1"), true, "an IPv4-mapped address is its IPv4 address");
  assert.equal(trusted("not an address"), false);
  assert.equal(rangesMatcher(["10.1.2.0/23"])("10.1.3.255"), true);
  assert.equal(rangesMatcher(["10.1.2.0/23"])("10.1.4.0"), false);
});

Deno.test("isLoopback() knows loopback names and addresses, and nothing that only looks like one", () => {
  for (const host of ["localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "127.9.9.9", "::1"]) {
    assert.equal(isLoopback(host), true, host);
  }
  for (const host of ["localhost.evil.example", "0.0.0.0", "128.0.0.1", "::2", "gw.example.com"]) {
    assert.equal(isLoopback(host), false, host);
  }
});

Deno.test("throttleKey() keys IPv6 clients by their /64, since one subscriber holds the whole of it", () => {
  assert.equal(throttleKey("2001:db8:1:2:aaaa::1"), throttleKey("2001:db8:1:2:bbbb::9"));
  assert.notEqual(throttleKey("2001:db8:1:2::1"), throttleKey("2001:db8:1:3::1"));
  assert.equal(throttleKey("203.0.113.9"), "203.0.113.9");
});

const PROXY = rangesMatcher(["10.0.0.0/8"]);
const forwarded = {
  "x-forwarded-for": "198.51.100.1, 203.0.113.5, 10.0.0.9",
  "x-forwarded-host": "gw.example.com",
  "x-forwarded-proto": "https",
};
const request = (headers: Record<string, string>) => new Request("http://gw.internal:8787/ui/", { headers });

Deno.test("peerOf() ignores forwarded headers from an address that is no trusted proxy", () => {
  assert.deepEqual(peerOf(request(forwarded), "203.0.113.77", PROXY), {
    address: "203.0.113.77",
    authority: "gw.internal:8787",
    hostname: "gw.internal",
    https: false,
  });
});

Deno.test("peerOf() believes a trusted proxy, reading X-Forwarded-For from the right past trusted hops", () => {
  // 198.51.100.1 was written by the client itself; 203.0.113.5 is what the trusted proxy 10.0.0.9 saw.
  assert.deepEqual(peerOf(request(forwarded), "10.0.0.2", PROXY), {
    address: "203.0.113.5",
    authority: "gw.example.com",
    hostname: "gw.example.com",
    https: true,
  });
});

Deno.test("peerOf() stops at an X-Forwarded-For entry that is no address, and keeps a Host it cannot read", () => {
  const odd = request({ "x-forwarded-for": "203.0.113.5, garbage", "x-forwarded-host": "evil.example/path" });
  const peer = peerOf(odd, "10.0.0.2", PROXY);
  assert.equal(peer.address, "10.0.0.2");
  assert.equal(peer.authority, "gw.internal:8787");
  assert.equal(peerOf(request({ "x-forwarded-for": "[2001:db8::5]:4711" }), "10.0.0.2", PROXY).address, "2001:db8::5");
  assert.equal(peerOf(request({ "x-forwarded-for": "203.0.113.5:4711" }), "10.0.0.2", PROXY).address, "203.0.113.5");
  assert.equal(peerOf(request({}), undefined, PROXY).address, "unknown");
});

Deno.test("publicHostRule() allows the listed names, and loopback names only while listening on loopback", () => {
  const onLoopback = publicHostRule(["gw.example.com"], "127.0.0.1");
  assert.equal(onLoopback("gw.example.com"), true);
  assert.equal(onLoopback("GW.example.com."), true);
  assert.equal(onLoopback("localhost"), true);
  assert.equal(onLoopback("::1"), true);
  assert.equal(onLoopback("gw.example.co"), false);
  assert.equal(onLoopback("rebind.evil.example"), false);
  const everywhere = publicHostRule(["gw.example.com"], "0.0.0.0");
  assert.equal(everywhere("gw.example.com"), true);
  assert.equal(everywhere("localhost"), false);
  assert.equal(publicHostRule([], "0.0.0.0")("anything.example"), false);
});

Deno.test("publicHostsWarning() speaks up when the operator's routes would answer for no host name", () => {
  const config = (yaml: string) =>
    parseConfig(
      `${yaml}
upstreams: [{ name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m] }]
groups: [{ name: g, listing: anthropic, models: [m] }]
`,
      "test.yaml",
    );
  const key = "k".repeat(32);
  const wide = config("listen: { host: 0.0.0.0, port: 0 }");
  assert.match(publicHostsWarning(wide, key)!, /listening on 0\.0\.0\.0 with no public_hosts/);
  assert.equal(publicHostsWarning(wide, undefined), undefined, "no admin key, no operator's routes");
  assert.equal(
    publicHostsWarning(config("listen: { host: 0.0.0.0, port: 0 }\npublic_hosts: [gw.example.com]"), key),
    undefined,
  );
  assert.equal(publicHostsWarning(config(""), key), undefined, "loopback names are answered on loopback");
});

Deno.test("the config refuses a trusted proxy or a public host it cannot read, naming the entry", () => {
  const yaml = (extra: string) =>
    `${extra}
upstreams: [{ name: a, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m] }]
groups: [{ name: g, listing: anthropic, models: [m] }]
`;
  assert.throws(
    () => parseConfig(yaml("trusted_proxies: [10.0.0.0/33]"), "t.yaml"),
    /trusted_proxies\[0\]: must be an address or a range/,
  );
  assert.throws(() => parseConfig(yaml("trusted_proxies: [proxy.internal]"), "t.yaml"), /trusted_proxies\[0\]/);
  assert.throws(
    () => parseConfig(yaml('public_hosts: [ok.example, "http://gw.example"]'), "t.yaml"),
    /public_hosts\[1\]: must be a host name/,
  );
});
