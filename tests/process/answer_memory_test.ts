/**
 * @module A large non-streamed answer is held about once: a child process (_answer_memory.ts) measures how far its
 * resident memory rises for one answer of 50 MB, passed through and translated, against a server that pipes the same
 * answer through holding nothing; the gateway may add about twice the answer's size above that, not the five times it
 * once took (docs/operating.md, "Answer sizes"; the figures before and after in bench/PROFILE.md).
 */
import assert from "node:assert/strict";
import { measuringChild } from "../_process.ts";

const MB = 50;

/** What the child measured for one answer of `MB` megabytes, served the way `mode` says. */
async function grown(mode: string): Promise<number> {
  const measured = await measuringChild(new URL("./_answer_memory.ts", import.meta.url), [String(MB), mode, "1"]);
  assert.ok(Number(measured.sentBytes) >= Number(measured.answerBytes), JSON.stringify(measured));
  return Number(measured.grownPerAnswerMb);
}

Deno.test("a 50 MB answer, passed through or translated, costs the gateway about two copies of it at most", async () => {
  const floor = await grown("pipe");
  for (const mode of ["passthrough", "translated"]) {
    const above = (await grown(mode)) - floor;
    assert.ok(above < 3 * MB, `a ${mode} answer of ${MB} MB took ${above} MB more than piping it (${floor} MB)`);
  }
});
