/**
 * @module The person's CLI as a real process started with `deno task cli`'s command line: `run` passes SIGTERM and
 * (away from a terminal) SIGINT on to the command and gives back the exit code it ends with; Ctrl-C while `login`
 * waits ends it cleanly, with nothing saved.
 */
import assert from "node:assert/strict";
import { writeCredentials } from "../../src/cli/credentials.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { within } from "../_reads.ts";
import { pump, ROOT } from "../_process.ts";

/** `deno task cli`'s command line with `args` after it. */
async function cliCommand(...args: string[]): Promise<string[]> {
  const tasks = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks as Record<string, string>;
  const words = tasks.cli.split(/\s+/);
  assert.equal(words[0], "deno");
  return [Deno.execPath(), ...words.slice(1), ...args];
}

/** A CLI process whose output lines are collected, and a wait for the first line that matches. */
function spawnCli(command: string[], env: Record<string, string>) {
  const [program, ...args] = command;
  const child = new Deno.Command(program, {
    args,
    cwd: ROOT,
    env: { ...Deno.env.toObject(), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve(): void }[] = [];
  const onLine = (line: string) => {
    for (const waiter of waiters.filter((w) => w.pattern.test(line))) waiter.resolve();
  };
  const pumps = Promise.all([pump(child.stdout, lines, onLine), pump(child.stderr, lines, onLine)]);
  return {
    child,
    lines,
    /** Resolves when a line matching `pattern` has been written. */
    async saw(pattern: RegExp): Promise<void> {
      if (lines.some((line) => pattern.test(line))) return;
      const { promise, resolve } = Promise.withResolvers<void>();
      waiters.push({ pattern, resolve });
      await within(promise, 20_000, `a line matching ${pattern}; so far:\n${lines.join("\n")}`);
    },
    async exit(): Promise<number> {
      const status = await within(child.status, 20_000, "the CLI's exit");
      await pumps;
      return status.code;
    },
    /** Ends the CLI if a failed test left it running, and waits for its output to end. */
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch {
        // It has exited.
      }
      await pumps;
    },
  };
}

/** A command that says it is ready, then exits with 7 on SIGTERM and 5 on SIGINT (99 if neither comes in 30 s). */
const WAITS_FOR_SIGNALS = [
  'Deno.addSignalListener("SIGTERM", () => { console.log("child: SIGTERM"); Deno.exit(7); });',
  'Deno.addSignalListener("SIGINT", () => { console.log("child: SIGINT"); Deno.exit(5); });',
  'console.log("child: ready");',
  "setTimeout(() => Deno.exit(99), 30000);",
].join(" ");

for (const [signal, code] of [["SIGTERM", 7], ["SIGINT", 5]] as const) {
  Deno.test(`modelgate run passes ${signal} on to the command and exits with the command's code`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelgate_run_" });
    try {
      const credentials = `${dir}/modelgate/credentials.json`;
      await writeCredentials(credentials, {
        gateway: "http://127.0.0.1:9",
        token: "sk-signal-test",
        token_id: "tok_signal",
        owner: "ada@example.com",
        group: "default",
        expires_at: null,
      });
      await using cli = spawnCli(await cliCommand("run", "--", Deno.execPath(), "eval", WAITS_FOR_SIGNALS), {
        XDG_CONFIG_HOME: dir,
      });
      await cli.saw(/^child: ready$/);
      Deno.kill(cli.child.pid, signal);
      assert.equal(await cli.exit(), code, cli.lines.join("\n"));
      assert.ok(cli.lines.includes(`child: ${signal}`), cli.lines.join("\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("Ctrl-C while modelgate login waits for the person ends it with 130 and saves nothing", async () => {
  await using gateway = fakeUpstream();
  gateway.routes.set("POST /auth/device", () =>
    jsonReply({
      device_code: "dev-handle",
      user_code: "WXYZ-1234",
      verification_uri: "http://127.0.0.1:9/device",
      verification_uri_complete: "http://127.0.0.1:9/device?user_code=WXYZ-1234",
      interval: 1,
      expires_in: 600,
    }));
  gateway.routes.set(
    "POST /auth/device/token",
    () => jsonReply({ error: "authorization_pending", error_description: "not yet" }, 400),
  );
  const dir = await Deno.makeTempDir({ prefix: "modelgate_login_" });
  try {
    await using cli = spawnCli(await cliCommand("login", "--gateway", gateway.url), { XDG_CONFIG_HOME: dir });
    await cli.saw(/^http:\/\/127\.0\.0\.1:9\/device\?user_code=WXYZ-1234$/);
    // It is polling: the person has not confirmed yet.
    await cli.saw(/^Waiting for you to confirm/);
    Deno.kill(cli.child.pid, "SIGINT");
    assert.equal(await cli.exit(), 130, cli.lines.join("\n"));
    assert.ok(cli.lines.includes("Sign-in cancelled; nothing was saved."), cli.lines.join("\n"));
    await assert.rejects(Deno.stat(`${dir}/modelgate/credentials.json`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
