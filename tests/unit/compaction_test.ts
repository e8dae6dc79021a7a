/** @module The pure side of compaction: the threshold a request asks for, and the transcript the model summarizes. */
import assert from "node:assert/strict";
import { GatewayError } from "../../src/core/errors.ts";
import { compactThreshold, transcript, TRANSCRIPT_ITEM_CHARS, triggerIndex } from "../../src/translate/compaction.ts";

Deno.test("compactThreshold() reads context_management and names a bad entry", () => {
  assert.equal(compactThreshold({}), undefined);
  assert.equal(compactThreshold({ context_management: [{ type: "compaction", compact_threshold: 5000 }] }), 5000);
  assert.equal(compactThreshold({ context_management: [{ type: "compaction" }] }), undefined);
  const cases: [unknown, string][] = [
    [{ type: "compaction" }, "context_management"],
    [[{ type: "truncation" }], "context_management[0].type"],
    [[{ type: "compaction", compact_threshold: 0 }], "context_management[0].compact_threshold"],
    [[{ type: "compaction", compact_threshold: "1000" }], "context_management[0].compact_threshold"],
  ];
  for (const [value, param] of cases) {
    assert.throws(
      () => compactThreshold({ context_management: value }),
      (err: GatewayError) => err.status === 400 && err.param === param,
      JSON.stringify(value),
    );
  }
});

Deno.test("triggerIndex() finds the trigger only as the last item", () => {
  assert.equal(triggerIndex([{ type: "message" }]), undefined);
  assert.equal(triggerIndex([{ type: "message" }, { type: "compaction_trigger" }]), 1);
  assert.throws(
    () => triggerIndex([{ type: "compaction_trigger" }, { type: "message" }], 2),
    (err: GatewayError) => err.param === "input[2]",
  );
});

Deno.test("transcript() keeps every kind of turn but instructions, and cuts a long one in the middle", () => {
  const long = "a".repeat(3000) + "MIDDLE" + "z".repeat(3000);
  const text = transcript([
    { type: "message", role: "developer", content: "Be brief" },
    { type: "message", role: "system", content: "Be kind" },
    { type: "message", role: "user", content: "Fix the bug" },
    { type: "function_call", call_id: "c1", name: "shell", arguments: '{"cmd":"ls"}' },
    { type: "function_call_output", call_id: "c1", output: long },
    { type: "custom_tool_call", call_id: "c2", name: "apply_patch", input: "*** Begin Patch" },
    { type: "reasoning", summary: [{ type: "summary_text", text: "Thinking it over" }], encrypted_content: "x" },
    { type: "message", role: "user", content: [{ type: "input_text", text: "Look" }, { type: "input_image" }] },
  ]);
  assert.ok(!text.includes("Be brief") && !text.includes("Be kind"), "instructions stay out");
  for (const part of ["Fix the bug", '{"cmd":"ls"}', "*** Begin Patch", "Thinking it over", "[image]"]) {
    assert.ok(text.includes(part), part);
  }
  assert.ok(!text.includes("MIDDLE"));
  assert.ok(
    text.includes("a".repeat(TRANSCRIPT_ITEM_CHARS / 2)) && text.includes("z".repeat(TRANSCRIPT_ITEM_CHARS / 2)),
  );
  assert.match(text, /\[\.\.\. 2006 characters left out \.\.\.\]/);
});
