/**
 * @module The real Claude Code, non-interactive, through the gateway onto a Gemini upstream (the fake Gemini API on
 * 127.0.0.1, which refuses what the real one refuses): it completes a read-a-file tool loop. It runs when
 * MODELGATE_CLAUDE_CODE names Claude Code's executable (`npm install @anthropic-ai/claude-code`), skipped otherwise.
 */
import assert from "node:assert/strict";
import { withAgentOnGemini } from "../_agent_on_gemini.ts";
import { runClaudeCode } from "../_claude_code.ts";
import type { GeminiTurn } from "../_gemini_upstream.ts";
import { optIn } from "../_process.ts";

const CLI = Deno.env.get("MODELGATE_CLAUDE_CODE");

type Obj = Record<string, unknown>;

/** The model: read the notes file the prompt names with Claude Code's Read tool, then say what it holds. */
function model(body: Obj): GeminiTurn {
  const contents = body.contents as { role: string; parts: Obj[] }[];
  const answered = contents.at(-1)!.parts.find((p) => p.functionResponse)?.functionResponse as Obj | undefined;
  if (answered) return { parts: [{ text: `It says: ${JSON.stringify(answered.response)}` }] };
  const asked = /(\/[^\s"\\]+\/notes\.txt)/.exec(JSON.stringify(contents[0]))?.[1];
  const tools = ((body.tools as Obj[] | undefined)?.[0]?.functionDeclarations ?? []) as Obj[];
  if (!asked || !tools.some((t) => t.name === "Read")) return { parts: [{ text: "OK." }] };
  const call = { functionCall: { name: "Read", args: { file_path: asked } }, thoughtSignature: "Y2Mtc2lnLTE=" };
  return { parts: [{ text: "Reading it." }, call] };
}

Deno.test({
  ...optIn(
    "Claude Code completes a read-a-file tool loop through the gateway on a Gemini model",
    "MODELGATE_CLAUDE_CODE",
    "Claude Code's executable",
  ),
  async fn() {
    await withAgentOnGemini(model, async ({ dir, upstream, gw, token, sentSignature }) => {
      const out = await runClaudeCode(CLI!, { dir, url: gw.url, token, model: "gemini-test" });
      const text = out.stdout;
      const refusals = upstream.requests.filter((r) => r.path.includes("gemini-test")).length;
      assert.equal(out.code, 0, `${text}\n${out.stderr.slice(-2000)}\n${refusals}`);
      assert.match(text, /PLUM-42/);
      // The second turn carried Gemini's own signature back on the call, not the stand-in.
      assert.ok(sentSignature("Y2Mtc2lnLTE="), "the tool loop's second turn carried the thought signature");
    });
  },
});
