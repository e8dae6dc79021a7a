/**
 * @module docs/guardrails.md holds to the code: its kinds table names every built-in kind in its group, and the most
 * a stream holds back per kind is each detector's longest match less one.
 */
import assert from "node:assert/strict";
import { DETECTORS, KIND_GROUPS, PLACEHOLDER } from "../../src/core/detectors.ts";

const DOC = await Deno.readTextFile(new URL("../../docs/guardrails.md", import.meta.url));

Deno.test("docs (guardrails.md): the kinds table names every kind in its group", () => {
  for (const [group, kinds] of Object.entries(KIND_GROUPS)) {
    for (const kind of kinds) {
      assert.match(DOC, new RegExp(`^\\| \`${kind}\` +\\| ${group} +\\|`, "m"), kind);
    }
  }
});

Deno.test("docs (guardrails.md): the hold-back bound of each kind is its longest match less one", () => {
  const section = DOC.slice(DOC.indexOf("## Streams"), DOC.indexOf("## What is recorded"));
  const bounds = new Map<string, number>();
  for (const [, kind, held] of section.matchAll(/`([a-z_]+)` +\| ([\d,]+)/g)) {
    bounds.set(kind, Number(held.replaceAll(",", "")));
  }
  for (const [kind, detector] of Object.entries(DETECTORS)) assert.equal(bounds.get(kind), detector.max - 1, kind);
  assert.match(section, new RegExp(`placeholder \\(restore\\) \\| ${PLACEHOLDER.max - 1} `));
});
