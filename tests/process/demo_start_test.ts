/**
 * @module The demo upstream as a newcomer meets it, in real processes: the example config's start says it is on, a
 * token made with the CLI gets 200 from its model with no provider key set, streamed and not; a config that says
 * `production: true` refuses it at the start, naming the YAML path.
 */
import assert from "node:assert/strict";
import { denoMain, runCommand, startProcess } from "../_process.ts";
import { readSse, readText } from "../_reads.ts";

const EXAMPLE = "config/gateway.example.yaml";

async function inTempDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-demo-" });
  try {
    await run(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the example config's start says the demo is on, and its model answers a CLI token, streamed and not", async () => {
  await inTempDir(async (dir) => {
    // Only what a newcomer's shell has: no provider key of any kind.
    const env = { MODELGATE_KV: `${dir}/gate.kv` };
    await using gw = await startProcess({
      command: denoMain(dir, "serve", "--config", EXAMPLE, "--port", "0"),
      env,
    });
    const notice = gw.stderr.find((line) => line.startsWith("demo: "));
    assert.equal(
      notice,
      'demo: upstream "demo" is on (protocol: demo): its models (demo-model) answer by themselves, with no provider ' +
        "and no key; it is not for real traffic (a config with production: true refuses it)",
    );
    const created = await runCommand(
      denoMain(
        dir,
        "token",
        "create",
        "--group",
        "default",
        "--config",
        EXAMPLE,
      ),
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const body = {
      model: "demo-model",
      max_tokens: 256,
      messages: [{ role: "user", content: "Hello" }],
    };
    const headers = {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
    };
    const plain = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    assert.equal(plain.status, 200);
    const message = JSON.parse(await readText(plain));
    assert.match(message.content[0].text, /^Hello from modelgate's demo model/);
    const streamed = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ ...body, stream: true }),
    });
    assert.equal(streamed.status, 200);
    const events = (await readSse(streamed)).map((e) => e.event);
    assert.deepEqual([events[0], events.at(-1)], [
      "message_start",
      "message_stop",
    ]);
  });
});

Deno.test("a config with production: true refuses the demo upstream at the start, naming the YAML path", async () => {
  await inTempDir(async (dir) => {
    const config = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(
      config,
      `production: true\n${await Deno.readTextFile(EXAMPLE)}`,
    );
    const refused = await runCommand(
      denoMain(dir, "serve", "--config", config, "--port", "0"),
      {
        MODELGATE_KV: `${dir}/gate.kv`,
      },
    );
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `Cannot load config "${config}": upstreams\\[2\\]\\.protocol: upstream "demo" is the built-in demo, which a ` +
          "config with production: true refuses",
      ),
    );
    assert.doesNotMatch(refused.stderr, /listening on/);
  });
});
