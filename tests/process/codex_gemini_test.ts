/**
 * @module The real Codex CLI, non-interactive, through the gateway's Responses API onto a Gemini upstream (the fake
 * Gemini API on 127.0.0.1): it runs a command to read a file and answers from its output. It runs when
 * MODELGATE_CODEX names Codex's executable (`npm install @openai/codex`), and is skipped otherwise.
 */
import assert from "node:assert/strict";
import { withAgentOnGemini } from "../_agent_on_gemini.ts";
import { codexExec, codexProvider } from "../_codex.ts";
import type { GeminiTurn } from "../_gemini_upstream.ts";
import { optIn } from "../_process.ts";

const CLI = Deno.env.get("MODELGATE_CODEX");

type Obj = Record<string, unknown>;

/** The model: `cat` the notes file the prompt names with Codex's exec_command, then say what it holds. */
function model(body: Obj): GeminiTurn {
  const contents = body.contents as { role: string; parts: Obj[] }[];
  const answered = contents.at(-1)!.parts.find((p) => p.functionResponse)?.functionResponse as Obj | undefined;
  if (answered) return { parts: [{ text: `It says: ${JSON.stringify(answered.response)}` }] };
  const asked = /(\/[^\s"\\]+\/notes\.txt)/.exec(JSON.stringify(contents.at(-1)))?.[1];
  const tools = ((body.tools as Obj[] | undefined)?.[0]?.functionDeclarations ?? []) as Obj[];
  if (!asked || !tools.some((t) => t.name === "exec_command")) return { parts: [{ text: "OK." }] };
  const call = { functionCall: { name: "exec_command", args: { cmd: `cat ${asked}` } }, thoughtSignature: "Y3gtMQ==" };
  return { parts: [call] };
}

Deno.test({
  ...optIn(
    "Codex runs a command and answers from its output through the gateway on a Gemini model",
    "MODELGATE_CODEX",
    "Codex's executable",
  ),
  async fn() {
    await withAgentOnGemini(model, async ({ dir, gw, token, sentSignature }) => {
      const config = `model = "gemini-test"\n${codexProvider(gw.url)}`;
      const prompt = `Print the contents of ${dir}/notes.txt and tell me what it says.`;
      const text = await codexExec(CLI!, { dir, config, token, prompt });
      assert.match(text, /PLUM-42/);
      assert.ok(sentSignature("Y3gtMQ=="), "the tool loop's second turn carried the thought signature");
    });
  },
});
