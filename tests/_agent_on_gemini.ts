/**
 * @module What the opt-in tests of real agent CLIs onto a Gemini upstream share: a folder with a notes file for the
 * agent to read, the fake Gemini API on 127.0.0.1 answering as a scripted model, a gateway over it with a token of
 * the Gemini group, and whether a later turn carried a thought signature back.
 */
import { type FakeUpstream, fakeUpstream } from "./_fake_upstream.ts";
import { GEMINI_KEY, geminiResponder, type GeminiTurn, geminiUpstreamYaml } from "./_gemini_upstream.ts";
import { startGateway, type TestGateway } from "./_helpers.ts";

/** The set-up one agent run gets. */
export interface AgentOnGemini {
  /** A fresh folder holding notes.txt, removed afterwards. */
  dir: string;
  upstream: FakeUpstream;
  gw: TestGateway;
  /** A token of the group whose model is `gemini-test`. */
  token: string;
  /** True when a request the upstream received answered a tool call and carried `signature` on it. */
  sentSignature(signature: string): boolean;
}

/** Runs `run` with a notes file, the fake Gemini upstream answering as `model`, and a gateway over it. */
export async function withAgentOnGemini(
  model: (body: Record<string, unknown>) => GeminiTurn,
  run: (setup: AgentOnGemini) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/notes.txt`, "The launch code is PLUM-42.\n");
    await using upstream = fakeUpstream();
    const gemini = geminiResponder(model);
    for (const operation of ["generateContent", "streamGenerateContent", "countTokens"]) {
      upstream.routes.set(`POST /gem/v1beta/models/gemini-test:${operation}`, gemini);
    }
    await using gw = await startGateway(upstream.url, {
      ...geminiUpstreamYaml(upstream.url),
      env: { TEST_GEMINI_KEY: GEMINI_KEY },
    });
    const token = (await gw.store.createToken({ group: "gem" })).secret;
    const sentSignature = (signature: string) =>
      upstream.requests.some((r) => {
        const body = JSON.stringify(r.body ?? {});
        return body.includes(`"thoughtSignature":"${signature}"`) && body.includes("functionResponse");
      });
    await run({ dir, upstream, gw, token, sentSignature });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
