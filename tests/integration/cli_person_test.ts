/**
 * @module The person's side of the CLI as `deno task cli` runs it, in a temporary config home: `run` gives a real
 * command the login's variables and passes its exit code back, says so when there is no login, and `logout` revokes
 * the token at a real gateway and deletes the file (or keeps it when the gateway cannot be reached); `login` shows what
 * a gateway sends with control characters escaped.
 */
import assert from "node:assert/strict";
import { type Credentials, writeCredentials } from "../../src/cli/credentials.ts";
import { literal, personSetup, programNamed } from "../_cli.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, messagesBody, startGateway } from "../_helpers.ts";

function login(gateway: string, token: string, id = "tok_test"): Credentials {
  return { gateway, token, token_id: id, owner: "ada@example.com", group: "default", expires_at: null };
}

/** A `deno eval` script that writes its environment to `file` and exits with `code`. */
function printEnv(file: string, code: number): string[] {
  const script = `Deno.writeTextFileSync(${
    JSON.stringify(file)
  }, JSON.stringify(Deno.env.toObject())); Deno.exit(${code})`;
  return [Deno.execPath(), "eval", script];
}

Deno.test("modelgate run -- COMMAND runs it with the login's URLs and token, and its exit code comes back", async () => {
  await using person = await personSetup();
  await writeCredentials(person.credentials, login("http://127.0.0.1:9", "sk-run-secret"));
  person.env.ANTHROPIC_API_KEY = "a-key-that-would-win-over-the-token";
  const seen = `${person.dir}/env.json`;
  const run = await person.cli(["run", "--", ...printEnv(seen, 3)]);
  assert.equal(run.code, 3, run.err);
  const env = JSON.parse(await Deno.readTextFile(seen));
  assert.equal(env.ANTHROPIC_BASE_URL, "http://127.0.0.1:9");
  assert.equal(env.ANTHROPIC_AUTH_TOKEN, "sk-run-secret");
  assert.equal(env.OPENAI_BASE_URL, "http://127.0.0.1:9/v1");
  assert.equal(env.OPENAI_API_KEY, "sk-run-secret");
  assert.equal(env.ANTHROPIC_API_KEY, undefined);
  assert.equal(env.XDG_CONFIG_HOME, person.env.XDG_CONFIG_HOME, "the rest of the environment is passed on");
  assert.equal(run.out, "", "run prints nothing of its own");
});

Deno.test("modelgate run without a login says how to sign in and runs nothing", async () => {
  await using person = await personSetup();
  const seen = `${person.dir}/env.json`;
  const run = await person.cli(["run", "--", ...printEnv(seen, 0)]);
  assert.equal(run.code, 1);
  const program = literal(programNamed("modelgate"));
  assert.match(
    run.err,
    new RegExp(`^Not signed in \\(no .*credentials\\.json\\): run ${program} login --gateway URL first$`),
  );
  await assert.rejects(Deno.stat(seen), Deno.errors.NotFound);
});

Deno.test("modelgate run with a command that does not exist exits 127 naming it", async () => {
  await using person = await personSetup();
  await writeCredentials(person.credentials, login("http://127.0.0.1:9", "sk-run-secret"));
  const run = await person.cli(["run", "--", "modelgate-no-such-command"]);
  assert.equal(run.code, 127);
  assert.match(run.err, /no command "modelgate-no-such-command" found on PATH/);
  const bare = await person.cli(["run"]);
  assert.equal(bare.code, 2);
  assert.match(bare.err, /needs a command after --/);
});

Deno.test("the login is kept with mode 0600 under XDG_CONFIG_HOME/modelgate, replaced whole", async () => {
  await using person = await personSetup();
  await writeCredentials(person.credentials, login("http://127.0.0.1:9", "sk-first"));
  await writeCredentials(person.credentials, login("http://127.0.0.1:9", "sk-second"));
  assert.equal((await Deno.stat(person.credentials)).mode! & 0o777, 0o600);
  assert.equal((await Deno.stat(`${person.dir}/config/modelgate`)).mode! & 0o777, 0o700);
  assert.equal(JSON.parse(await Deno.readTextFile(person.credentials)).token, "sk-second");
  const left = [...Deno.readDirSync(`${person.dir}/config/modelgate`)].map((entry) => entry.name);
  assert.deepEqual(left, ["credentials.json"], "no temporary file is left behind");
});

Deno.test("modelgate logout revokes the token (the next call is 401) and deletes the file", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url);
  const { secret, record } = await gw.store.createToken({ group: "default", owner: "ada@example.com" });
  await using person = await personSetup();
  await writeCredentials(person.credentials, login(gw.url, secret, record.id));
  const out = await person.cli(["logout"]);
  assert.equal(out.code, 0, out.err);
  assert.match(out.err, new RegExp(`token ${record.id} revoked`));
  await assert.rejects(Deno.stat(person.credentials), Deno.errors.NotFound);
  const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
  assert.equal(res.status, 401);
  await res.body?.cancel();
  const again = await person.cli(["logout"]);
  assert.equal(again.code, 0);
  assert.match(again.err, /Not signed in/);
});

Deno.test("modelgate logout keeps the login when the gateway cannot be reached, and says the token still works", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}`;
  closed.close();
  await using person = await personSetup();
  await writeCredentials(person.credentials, login(url, "sk-kept"));
  const out = await person.cli(["logout"]);
  assert.equal(out.code, 1);
  assert.match(out.err, /Cannot reach the gateway at .*still works and stays in/);
  assert.ok(!out.err.includes("sk-kept"), "the secret is not printed");
  assert.equal(JSON.parse(await Deno.readTextFile(person.credentials)).token, "sk-kept");
});

Deno.test("modelgate run with an expired login says to sign in again and runs nothing", async () => {
  await using person = await personSetup();
  const expired = { ...login("http://127.0.0.1:9", "sk-old"), expires_at: "2026-01-01T00:00:00.000Z" };
  await writeCredentials(person.credentials, expired);
  const seen = `${person.dir}/env.json`;
  const run = await person.cli(["run", "--", ...printEnv(seen, 0)], () => {}, {
    now: () => Date.parse("2026-01-01T00:00:01Z"),
  });
  assert.equal(run.code, 1);
  const program = literal(programNamed("modelgate"));
  assert.match(
    run.err,
    new RegExp(
      `^The login for http://127\\.0\\.0\\.1:9 expired at 2026-01-01T00:00:00\\.000Z: run ${program} login again$`,
    ),
  );
  await assert.rejects(Deno.stat(seen), Deno.errors.NotFound);
});

Deno.test("modelgate login shows what a gateway sends (its code, page and errors) with control characters escaped", async () => {
  const hostile = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\u202e";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.body?.cancel();
    if (new URL(req.url).pathname === "/auth/device") {
      return Response.json({
        device_code: "d",
        user_code: `ABCD${hostile}`,
        verification_uri: `http://127.0.0.1:9/device${hostile}`,
        interval: 1,
        expires_in: 60,
      });
    }
    return Response.json({ error: "access_denied", error_description: `no${hostile}\nforged line` }, { status: 400 });
  });
  try {
    await using person = await personSetup();
    const gateway = `http://127.0.0.1:${server.addr.port}`;
    const login = await person.cli(["login", "--gateway", gateway], () => {}, {
      now: () => 0,
      sleep: () => Promise.resolve(),
    });
    assert.equal(login.code, 1);
    // deno-lint-ignore no-control-regex -- no control character may reach the terminal
    assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]/.test(login.err), JSON.stringify(login.err));
    assert.match(login.err, /confirm the code ABCD\\x1b\]52;c;cHduZWQ=\\x07\\x1b\[2J\\u202e:/);
    assert.match(login.err, /access denied: no\\x1b.*\\nforged line$/);
    assert.equal(login.err.split("\n").length, 4, "no line forged");
  } finally {
    await server.shutdown();
  }
});
