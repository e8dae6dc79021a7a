/**
 * @module The real Claude Code, non-interactive, through the gateway onto an `openai-responses` upstream (the fake
 * Responses API on 127.0.0.1, which checks the reasoning items it gets back as the real one does): it completes a
 * read-a-file tool loop, and the provider verifies its own reasoning on every turn after the first. It runs when
 * MODELGATE_CLAUDE_CODE names Claude Code's executable (`npm install @anthropic-ai/claude-code`), skipped otherwise.
 */
import assert from "node:assert/strict";
import { optIn } from "../_process.ts";
import { runClaudeCode } from "../_claude_code.ts";
import { responsesRig } from "../_responses_upstream.ts";

const CLI = Deno.env.get("MODELGATE_CLAUDE_CODE");

type Obj = Record<string, unknown>;

Deno.test({
  ...optIn(
    "Claude Code completes a read-a-file tool loop on gpt-codex, the provider verifying its own reasoning",
    "MODELGATE_CLAUDE_CODE",
    "Claude Code's executable",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/notes.txt`, "The launch code is PLUM-42.\n");
      await using rig = await responsesRig({
        script: [{ tool: "Read", args: { file_path: `${dir}/notes.txt` } }, {
          text: "The notes hold the launch code.",
        }],
      });
      const out = await runClaudeCode(CLI!, { dir, url: rig.gw.url, token: rig.token, model: "gpt-codex" });
      const sent = rig.upstream.requests.filter((r) => r.path === "/rsp-a/v1/responses").map((r) => r.body as Obj);
      assert.equal(out.code, 0, `${out.stdout}\n${out.stderr.slice(-2000)}`);
      assert.match(out.stdout, /launch code/);
      // Each request of the loop after its first hands back the provider's reasoning, and the provider verified it.
      const loop = sent.map((body, i) => ({ body, verified: rig.api["rsp-a"].verified[i] }))
        .filter(({ body }) => (body.input as Obj[]).some((item) => item.type === "function_call_output"));
      assert.ok(loop.length > 0, "Claude Code sent the file back");
      for (const { body, verified } of loop) {
        assert.match(JSON.stringify(body.input), /PLUM-42/);
        assert.ok(verified >= 1, `the provider verified its own reasoning: ${verified}`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
