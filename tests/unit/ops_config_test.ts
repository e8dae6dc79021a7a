/** @module The config's log and metrics sections, and where the config comes from (env YAML, flag, file). */
import assert from "node:assert/strict";
import { ConfigError, loadConfigFrom, parseConfig } from "../../src/core/config_load.ts";
import { kvOpenError } from "../../src/serve/runtime.ts";

const BASE = `
upstreams:
  - { name: up, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: K, models: [m1] }
groups:
  - { name: g, listing: anthropic, models: [m1] }
`;

Deno.test("parseConfig() defaults log to info/json and metrics to no admin key", () => {
  const config = parseConfig(BASE, "t.yaml");
  assert.deepEqual(config.log, { level: "info", format: "json" });
  assert.deepEqual(config.metrics, { require_admin_key: false });
});

const BAD = [
  { name: "an unknown log format", yaml: "log: { format: xml }", message: /log\.format/ },
  { name: "an unknown log level", yaml: "log: { level: loud }", message: /log\.level/ },
  { name: "a misspelt log key", yaml: "log: { levle: info }", message: /: log\.levle: is not a known field$/ },
  {
    name: "a misspelt metrics key",
    yaml: "metrics: { require_admin: true }",
    message: /: metrics\.require_admin: is not a known field$/,
  },
  { name: "a non-boolean admin flag", yaml: 'metrics: { require_admin_key: "yes" }', message: /require_admin_key/ },
];
for (const c of BAD) {
  Deno.test(`parseConfig() refuses ${c.name}, naming the field`, () => {
    assert.throws(() => parseConfig(`${c.yaml}\n${BASE}`, "t.yaml"), (err: Error) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, c.message);
      return true;
    });
  });
}

Deno.test("loadConfigFrom() takes --config, then MODELGATE_CONFIG_YAML, then MODELGATE_CONFIG", async () => {
  const env = (values: Record<string, string>) => (name: string) => values[name];
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  try {
    await Deno.writeTextFile(file, `log: { level: error }\n${BASE}`);
    const yaml = `log: { level: warn }\n${BASE}`;
    const fromEnv = await loadConfigFrom(undefined, env({ MODELGATE_CONFIG_YAML: yaml, MODELGATE_CONFIG: file }));
    assert.equal(fromEnv.source, "$MODELGATE_CONFIG_YAML");
    assert.equal(fromEnv.config.log.level, "warn");
    const fromFlag = await loadConfigFrom(file, env({ MODELGATE_CONFIG_YAML: BASE }));
    assert.equal(fromFlag.source, file);
    assert.equal(fromFlag.config.log.level, "error");
  } finally {
    await Deno.remove(file);
  }
  await assert.rejects(
    loadConfigFrom(undefined, env({ MODELGATE_CONFIG_YAML: "upstreams: [" })),
    /Cannot load config "\$MODELGATE_CONFIG_YAML": invalid YAML/,
  );
});

const FROM_CONFIG = { where: "kv_path in config/gateway.yaml", change: "kv_path" };
const KV_PROBLEMS = [
  {
    name: "Deno's refusal names the flag and the tasks",
    err: new Deno.errors.NotCapable('Requires write access to "/var/lib/modelgate/shared.kv"'),
    want:
      /^Cannot open KV "\/var\/lib\/modelgate\/shared\.kv" \(kv_path in config\/gateway\.yaml\): this process may not write to "\/var\/lib\/modelgate" .*`deno task start` or `deno task cli`.*--allow-write=\/var\/lib\/modelgate .*set kv_path/,
  },
  {
    name: "the system's refusal to make the folder names the folder and the owner",
    err: new Deno.errors.PermissionDenied("Permission denied (os error 13): mkdir '/var/lib/modelgate'"),
    want:
      /may not create or write "\/var\/lib\/modelgate" \(Permission denied.*sudo install -d -o "\$\(id -un\)" \/var\/lib\/modelgate\), or set kv_path/,
  },
  {
    name: "the database the system will not let it open",
    err: new Error("unable to open database file: /var/lib/modelgate/shared.kv"),
    want: /may not create or write "\/var\/lib\/modelgate" \(unable to open database file/,
  },
  {
    name: "a file where the folder should be",
    err: new Deno.errors.AlreadyExists("File exists (os error 17): mkdir '/var/lib/modelgate'"),
    want: /"\/var\/lib\/modelgate" is not a folder \(File exists.*\); set kv_path to a file in a folder it may write$/,
  },
  { name: "anything else as it is", err: new Error("database is locked"), want: /\): database is locked$/ },
];
for (const c of KV_PROBLEMS) {
  Deno.test(`kvOpenError(): ${c.name}`, () => {
    assert.match(kvOpenError("/var/lib/modelgate/shared.kv", c.err, FROM_CONFIG).message, c.want);
  });
}
