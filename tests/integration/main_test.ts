/** @module The real process: first start on the example config without keys, the token CLI, and graceful shutdown. */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream } from "../_fake_upstream.ts";
import { bodyReader, firstEvent, fixture, messagesBody, UPSTREAM_KEYS } from "../_helpers.ts";
import { denoMain, runCommand, startProcess } from "../_process.ts";

const EXAMPLE = Deno.readTextFileSync(new URL("../../config/gateway.example.yaml", import.meta.url));

Deno.test("the example config starts with no keys set, names the missing keys and answers 503", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(config, EXAMPLE.replace("port: 8787", "port: 0"));
    // Empty key variables stand for unset ones, whatever the machine running the test has.
    const env = { MODELGATE_KV: `${dir}/gate.kv`, ANTHROPIC_API_KEY: "", OPENAI_API_KEY: "" };
    const created = await runCommand(denoMain(dir, "token", "create", "--group", "default", "--config", config), env);
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    assert.match(token, /^sk-[A-Za-z0-9_-]{43}$/);
    assert.match(created.stderr, /shown once/);
    await using gw = await startProcess({ command: denoMain(dir, "serve", "--config", config), env });
    const stderr = gw.stderr.join("\n");
    assert.match(stderr, /upstream "anthropic" has no key: ANTHROPIC_API_KEY is not set/);
    assert.match(stderr, /upstream "openai" has no key: OPENAI_API_KEY is not set/);
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify(messagesBody({ model: "claude-sonnet-4-5" })),
    });
    assert.equal(res.status, 503);
    assert.match((await res.json()).error.message, /key is not configured/);
    const listed = await runCommand(denoMain(dir, "token", "list", "--json", "--config", config), env);
    assert.ok(!listed.stdout.includes(token), "token list shows a secret");
    assert.equal(await gw.stop(), 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serve refuses to start with an admin key shorter than 32 characters, and says why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(config, EXAMPLE.replace("port: 8787", "port: 0"));
    const env = { MODELGATE_KV: `${dir}/gate.kv`, MODELGATE_ADMIN_KEY: "a".repeat(31) };
    const refused = await runCommand(denoMain(dir, "serve", "--config", config), env, 30_000);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /MODELGATE_ADMIN_KEY is 31 characters long; it must be at least 32/);
    assert.doesNotMatch(refused.stderr, /listening/);
    assert.ok(!refused.stderr.includes("a".repeat(31)), "the key itself is not printed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function streamingSetup(graceMs: number) {
  const dir = await Deno.makeTempDir();
  const upstream = fakeUpstream();
  const stream = controlledStream();
  upstream.routes.set("POST /anth/v1/messages", () => stream.response);
  const config = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(
    config,
    `listen: { host: 127.0.0.1, port: 0 }
kv_path: "${dir}/gate.kv"
shutdown_grace_ms: ${graceMs}
upstreams:
  - { name: anth, protocol: anthropic, base_url: "${upstream.url}/anth/v1", api_key_env: TEST_ANTHROPIC_KEY, models: [claude-test] }
groups: [{ name: default, listing: anthropic, models: [claude-test] }]
`,
  );
  const env = { ...UPSTREAM_KEYS };
  const token = (await runCommand(denoMain(dir, "token", "create", "--group", "default", "--config", config), env))
    .stdout.trim();
  const gw = await startProcess({ command: denoMain(dir, "serve", "--config", config), env });
  const pending = fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body: JSON.stringify(messagesBody({ stream: true })),
  });
  const whole = fixture("anthropic_text.sse");
  const first = firstEvent(whole);
  stream.send(first);
  const body = bodyReader(await pending);
  const text = await body.next() ?? "";
  return {
    gw,
    stream,
    whole,
    first,
    /** Everything the client received: the first read and the rest to the end. */
    readRest: async () => text + await body.rest(),
    async [Symbol.asyncDispose]() {
      await body.cancel();
      await gw[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("SIGTERM lets an in-flight stream finish, then exits 0", async () => {
  await using s = await streamingSetup(10_000);
  const exited = s.gw.stop();
  s.stream.send(s.whole.slice(s.first.length));
  s.stream.end();
  assert.equal(await s.readRest(), s.whole);
  assert.equal(await exited, 0);
  assert.match(s.gw.stderr.join("\n"), /stopping/);
});

Deno.test("SIGTERM ends a stream still open after the grace period with an in-band error, then exits 0", async () => {
  await using s = await streamingSetup(200);
  const exited = s.gw.stop();
  const text = await s.readRest();
  assert.ok(text.startsWith(s.first));
  assert.match(text, /event: error\ndata: .*shutting down/);
  assert.ok(!text.includes("message_stop"));
  assert.equal(await exited, 0);
});
