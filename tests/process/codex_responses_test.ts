/**
 * @module The real Codex CLI, non-interactive, through the gateway onto an `openai-responses` upstream (the fake
 * Responses API on 127.0.0.1, which verifies its own reasoning and compaction items): a tool loop on its built-in
 * provider over the WebSocket and over HTTP, and on a provider of its own; a longer loop that compacts on the
 * provider. It runs when MODELGATE_CODEX names Codex's executable (`npm install @openai/codex`), skipped otherwise.
 */
import assert from "node:assert/strict";
import { codexExec, codexProvider } from "../_codex.ts";
import { optIn } from "../_process.ts";
import { type ResponsesRig, responsesRig } from "../_responses_upstream.ts";
import type { Step } from "../_scripted_model.ts";

const CLI = Deno.env.get("MODELGATE_CODEX");

/** Codex's config for each way of reaching the gateway. */
function codexConfig(kind: "builtin" | "builtin-http" | "custom", url: string, extra = ""): string {
  const head = `model = "gpt-codex"\nmodel_reasoning_effort = "low"\nmodel_reasoning_summary = "auto"\n${extra}\n`;
  if (kind === "builtin") return `${head}openai_base_url = "${url}/v1"\n`;
  // Named "OpenAI", a provider of one's own is served as the built-in one is (server compaction), over plain HTTP.
  const name = kind === "builtin-http" ? "OpenAI" : "modelgate";
  return `${head}${codexProvider(url, { id: "mg", name, extra: "supports_websockets = false\n" })}`;
}

/** A folder with notes files, and a script that reads each with Codex's exec_command, then answers. */
async function notes(files: number): Promise<{ dir: string; script: Step[] }> {
  const dir = await Deno.makeTempDir();
  const script: Step[] = [];
  for (let i = 1; i <= files; i++) {
    await Deno.writeTextFile(`${dir}/notes${i}.txt`, `Code ${i}: PLUM-${40 + i}.\n`);
    script.push({ tool: "exec_command", args: { cmd: `cat ${dir}/notes${i}.txt` } });
  }
  script.push({ text: "DONE: the notes hold the launch codes." });
  return { dir, script };
}

/** The request bodies the Responses deployment served, in order. */
function served(rig: ResponsesRig): Record<string, unknown>[] {
  return rig.upstream.requests.filter((r) => r.path === "/rsp-a/v1/responses").map((r) => r.body!);
}

for (const kind of ["builtin", "builtin-http", "custom"] as const) {
  Deno.test({
    ...optIn(
      `Codex's tool loop onto a Responses upstream (${kind}): reasoning verified by the provider on every later turn`,
      "MODELGATE_CODEX",
      "Codex's executable",
    ),
    async fn() {
      const { dir, script } = await notes(1);
      try {
        await using rig = await responsesRig({
          script,
          configExtra: kind === "builtin-http" ? "responses_socket: { enabled: false }" : "",
        });
        const config = codexConfig(kind, rig.gw.url);
        const out = await codexExec(CLI!, { dir, config, token: rig.token, prompt: "Read notes1.txt for me." });
        assert.match(out, /DONE: the notes hold the launch codes/);
        const bodies = served(rig);
        assert.ok(bodies.length >= 2, `the loop took ${bodies.length} turns`);
        assert.ok(JSON.stringify(bodies.at(-1)).includes("PLUM-41"), "the command's output went back to the model");
        const verified = rig.api["rsp-a"].verified;
        assert.ok(verified.slice(1).every((n) => n >= 1), `reasoning verified on each later turn: ${verified}`);
        const calls = rig.gw.exchanges.filter((e) => e.usage !== undefined);
        const transports = new Set(calls.map((e) => e.transport ?? "http"));
        assert.deepEqual([...transports], [kind === "builtin" ? "websocket" : "http"]);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

Deno.test({
  ...optIn(
    "Codex compacts a long loop on the provider, which reads its own compaction item on the next turns",
    "MODELGATE_CODEX",
    "Codex's executable",
  ),
  async fn() {
    const { dir, script } = await notes(3);
    try {
      await using rig = await responsesRig({ script });
      const config = codexConfig("builtin", rig.gw.url, "model_auto_compact_token_limit = 300");
      const prompt = "Read notes1.txt, notes2.txt and notes3.txt, one by one.";
      const out = await codexExec(CLI!, { dir, config, token: rig.token, prompt });
      assert.match(out, /DONE/);
      const bodies = served(rig);
      const trigger = bodies.findIndex((b) => JSON.stringify(b).includes('"compaction_trigger"'));
      const compact = rig.upstream.requests.some((r) => r.path === "/rsp-a/v1/responses/compact");
      assert.ok(trigger >= 0 || compact, "Codex asked the provider to compact");
      assert.ok(rig.api["rsp-a"].compactions.some((n) => n > 0), "a later turn brought the provider's item back");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
