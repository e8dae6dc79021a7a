/**
 * @module The real Gemini CLI, non-interactive, through the gateway onto an Anthropic upstream (the fake on
 * 127.0.0.1): it answers a prompt and completes a read-a-file tool loop. It runs when MODELGATE_GEMINI_CLI names the
 * CLI's executable (`npm install @google/gemini-cli`, then node_modules/.bin/gemini), and is skipped otherwise.
 */
import assert from "node:assert/strict";
import { fakeUpstream, jsonReply, sseReply } from "../_fake_upstream.ts";
import { startGateway, testConfigYaml } from "../_helpers.ts";
import { optIn } from "../_process.ts";

const CLI = Deno.env.get("MODELGATE_GEMINI_CLI");

type Obj = Record<string, unknown>;

/** An Anthropic message as the events of its stream. */
function asStream(message: Obj): string {
  const ev = (data: Obj) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = ev({ type: "message_start", message: { ...message, content: [], usage: { input_tokens: 50 } } });
  (message.content as Obj[]).forEach((block, index) => {
    // As the API streams them: blocks start empty, and their text or input comes in deltas.
    const { input, text, ...start } = block;
    out += ev({
      type: "content_block_start",
      index,
      content_block: input ? { ...start, input: {} } : { ...start, text: "" },
    });
    const delta = input
      ? { type: "input_json_delta", partial_json: JSON.stringify(input) }
      : { type: "text_delta", text };
    out += ev({ type: "content_block_delta", index, delta });
    out += ev({ type: "content_block_stop", index });
  });
  out += ev({ type: "message_delta", delta: { stop_reason: message.stop_reason }, usage: { output_tokens: 9 } });
  return out + ev({ type: "message_stop" });
}

/** The model's side: read the file the prompt names with the CLI's own read tool, then say what it holds. */
function model(body: Obj): Obj {
  const messages = body.messages as { content: unknown }[];
  const last = messages.at(-1)!.content;
  const result = Array.isArray(last) ? last.find((b) => (b as Obj).type === "tool_result") as Obj : undefined;
  const read = (body.tools as Obj[] ?? []).find((t) => t.name === "read_file");
  const asked = /(\/[^\s"\\]+\/notes\.txt)/.exec(JSON.stringify(messages[0].content))?.[1];
  const base = { id: "msg_1", type: "message", role: "assistant", model: "claude-test" };
  if (result) {
    return { ...base, stop_reason: "end_turn", content: [{ type: "text", text: `It says: ${result.content}` }] };
  }
  if (!asked || !read) return { ...base, stop_reason: "end_turn", content: [{ type: "text", text: "Hello there." }] };
  const schema = read.input_schema as { properties: Obj };
  const key = Object.keys(schema.properties).find((k) => k.includes("path")) ?? "file_path";
  const call = { type: "tool_use", id: "toolu_read_1", name: "read_file", input: { [key]: asked } };
  return { ...base, stop_reason: "tool_use", content: [{ type: "text", text: "Reading it." }, call] };
}

async function runCli(gatewayUrl: string, token: string, prompt: string, dir: string): Promise<string> {
  const out = await new Deno.Command(CLI!, {
    args: ["-m", "claude-test", "-p", prompt, "--yolo"],
    cwd: dir,
    clearEnv: true,
    env: {
      HOME: dir,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      GOOGLE_GEMINI_BASE_URL: gatewayUrl,
      GEMINI_API_KEY: token,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(120_000),
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, `${text}\n${new TextDecoder().decode(out.stderr).slice(-2000)}`);
  return text;
}

Deno.test({
  ...optIn(
    "Gemini CLI answers a prompt and completes a read-a-file tool loop through the gateway on a Claude model",
    "MODELGATE_GEMINI_CLI",
    "the CLI's executable (node_modules/.bin/gemini)",
  ),
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.mkdir(`${dir}/.gemini`);
      // Gemini CLI 0.61 refuses to run headless with GOOGLE_GEMINI_BASE_URL unless the auth type is chosen.
      const settings = {
        security: { auth: { selectedType: "gemini-api-key" } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true },
      };
      await Deno.writeTextFile(`${dir}/.gemini/settings.json`, JSON.stringify(settings));
      await Deno.writeTextFile(`${dir}/notes.txt`, "The launch code is PLUM-42.\n");
      await using upstream = fakeUpstream();
      upstream.routes.set("POST /anth/v1/messages", (seen) => {
        const message = model(seen.body!);
        return seen.body!.stream ? sseReply(asStream(message)) : jsonReply({ ...message, usage: { input_tokens: 5 } });
      });
      await using gw = await startGateway(upstream.url, { configYaml: testConfigYaml(upstream.url) });
      assert.match(await runCli(gw.url, gw.tokens.default, "Say hello.", dir), /Hello there\./);
      const answer = await runCli(gw.url, gw.tokens.default, `Read ${dir}/notes.txt and tell me what it says.`, dir);
      assert.match(answer, /PLUM-42/);
      assert.ok(gw.exchanges.every((e) => e.protocol === "gemini" && e.status === 200));
      const last = upstream.requests.at(-1)!.body!.messages as { content: Obj[] }[];
      assert.equal(last.at(-1)!.content[0].type, "tool_result");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
