/** @module listenAddress() and listenError(): where serve listens (flag, environment, config) and what a failed listen says. */
import assert from "node:assert/strict";
import { listenAddress, listenError } from "../../src/serve/runtime.ts";

const CONFIG = { host: "127.0.0.1", port: 8787 };

const CASES: Array<
  { name: string; flags: { host?: string; port?: string }; env: Record<string, string>; want: unknown }
> = [
  { name: "the config's when nothing is set", flags: {}, env: {}, want: CONFIG },
  { name: "--port", flags: { port: "9000" }, env: {}, want: { host: "127.0.0.1", port: 9000 } },
  { name: "--host", flags: { host: "0.0.0.0" }, env: {}, want: { host: "0.0.0.0", port: 8787 } },
  { name: "MODELGATE_PORT", flags: {}, env: { MODELGATE_PORT: "9001" }, want: { host: "127.0.0.1", port: 9001 } },
  { name: "MODELGATE_HOST", flags: {}, env: { MODELGATE_HOST: "::1" }, want: { host: "::1", port: 8787 } },
  { name: "the flag over the variable", flags: { port: "9000" }, env: { MODELGATE_PORT: "9001" }, want: 9000 },
  { name: "an empty variable as unset", flags: {}, env: { MODELGATE_PORT: "", MODELGATE_HOST: "" }, want: CONFIG },
  { name: "port 0 (any free port)", flags: { port: "0" }, env: {}, want: { host: "127.0.0.1", port: 0 } },
  { name: "a port past 65535 refused", flags: { port: "65536" }, env: {}, want: /port "65536" \(from --port\)/ },
  { name: "a port that is no number refused", flags: {}, env: { MODELGATE_PORT: "80a" }, want: /\$MODELGATE_PORT/ },
  { name: "a negative port refused", flags: { port: "-1" }, env: {}, want: /from 0 to 65535/ },
  { name: "a host with a space refused", flags: { host: "a b" }, env: {}, want: /host "a b" \(from --host\)/ },
];

for (const c of CASES) {
  Deno.test(`listenAddress(): ${c.name}`, () => {
    const run = () => listenAddress(CONFIG, c.flags, (name) => c.env[name]);
    if (c.want instanceof RegExp) assert.throws(run, c.want);
    else if (typeof c.want === "number") assert.equal(run().port, c.want);
    else assert.deepEqual(run(), c.want);
  });
}

Deno.test("listenError() names the address, why and what to do", () => {
  const inUse = listenError({ host: "127.0.0.1", port: 8787 }, new Deno.errors.AddrInUse("Address already in use"));
  assert.match(inUse.message, /^Cannot listen on 127\.0\.0\.1:8787: the address is already in use/);
  assert.match(inUse.message, /--port N \(or MODELGATE_PORT, or listen\.port in the config\)/);
  const v6 = listenError({ host: "::1", port: 80 }, new Deno.errors.PermissionDenied("denied"));
  assert.match(v6.message, /^Cannot listen on \[::1\]:80: not permitted/);
  const elsewhere = listenError({ host: "10.9.9.9", port: 1 }, new Deno.errors.AddrNotAvailable("x"));
  assert.match(elsewhere.message, /--host \(or MODELGATE_HOST/);
  assert.equal(listenError({ host: "h", port: 2 }, elsewhere), elsewhere, "one already made is kept");
});
