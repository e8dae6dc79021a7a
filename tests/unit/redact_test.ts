/** @module Tests for taking secrets out of text in every form a JSON decoder would turn into the secret. */
import assert from "node:assert/strict";
import { decodedTexts } from "../_decoded.ts";
import { REDACTED, redactText, textRedactor } from "../../src/core/redact.ts";

const KEY = "sk-up/stream+0123456789abcdef";
const PEM = "-----BEGIN PRIVATE KEY-----\nMIIEv/QIB+ADAN\n-----END PRIVATE KEY-----\n";

/** Every unit of `text` as a `\uXXXX` escape, with lower- or upper-case hex digits. */
function allEscaped(text: string, upper = false): string {
  return [...text].map((c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  }).join("");
}

/** JSON texts that each decode (once, or twice for JSON in a string) to a value holding `secret`. */
const ENCODINGS: { name: string; json: (secret: string) => string }[] = [
  { name: "as it is", json: (s) => JSON.stringify({ message: `bad key ${s}` }) },
  { name: "with its first letter escaped", json: (s) => `{"message":"bad key \\u${hex(s[0])}${esc(s.slice(1))}"}` },
  { name: "every unit escaped", json: (s) => `{"message":"${allEscaped(s)}"}` },
  { name: "every unit escaped in upper case", json: (s) => `{"message":"${allEscaped(s, true)}"}` },
  { name: "with its slashes escaped", json: (s) => JSON.stringify({ message: s }).replaceAll("/", "\\/") },
  { name: "as a property name", json: (s) => JSON.stringify({ [s]: 1 }) },
  {
    name: "escaped inside JSON inside a string (tool arguments)",
    json: (s) => JSON.stringify({ arguments: `{"a":"${allEscaped(s)}"}` }),
  },
  {
    name: "with slashes escaped inside JSON inside a string",
    json: (s) => JSON.stringify({ arguments: JSON.stringify({ a: s }).replaceAll("/", "\\/") }),
  },
  {
    name: "as it is inside JSON inside a string",
    json: (s) => JSON.stringify({ arguments: JSON.stringify({ a: s }) }),
  },
];
function hex(c: string): string {
  return c.charCodeAt(0).toString(16).padStart(4, "0");
}
function esc(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
/** True when what `json` decodes to, at either depth, holds `secret`. */
function decodesTo(json: string, secret: string): boolean {
  return decodedTexts(json).some((text) => text.includes(secret));
}

for (const secret of [KEY, PEM]) {
  for (const c of ENCODINGS) {
    Deno.test(`redactText() takes out a ${secret === KEY ? "key" : "private key"} ${c.name}`, () => {
      const json = c.json(secret);
      assert.ok(decodesTo(json, secret), "the encoding decodes to the secret");
      const out = redactText(json, [secret]);
      assert.ok(!decodesTo(out, secret), `the secret survived: ${out}`);
      assert.ok(out.includes(REDACTED), out);
    });
  }
}

Deno.test("redactText() leaves near misses and other escapes as they are", () => {
  const text = JSON.stringify({ a: "sk-up/stream+0123456789abcdeX", b: "caf\u00e9 \u2603" }) + ' "\\u0073k-" \\/';
  assert.equal(redactText(text, [KEY]), text);
  assert.equal(redactText(text, []), text);
});

Deno.test("textRedactor().value() redacts strings and property names at any depth, and keeps what is clean", () => {
  const redactor = textRedactor([KEY]);
  const clean = { a: [1, { b: "fine" }], c: null };
  assert.equal(redactor.value(clean), clean, "nothing changed, nothing copied");
  const dirty = { a: [1, { b: `key ${KEY}` }], [KEY]: true, c: "fine" };
  assert.deepEqual(redactor.value(dirty), { a: [1, { b: `key ${REDACTED}` }], [REDACTED]: true, c: "fine" });
  assert.equal(dirty.a[1] && (dirty.a[1] as { b: string }).b, `key ${KEY}`, "the input is not changed");
});

/** The fastest of `runs` timings of `work`, in milliseconds: the least disturbed by the rest of the machine. */
function fastest(work: () => void, runs = 5): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    work();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

Deno.test("the escaped-key search costs the same for one long run of backslashes as for many short ones", () => {
  // Two texts of the same length that both hold an escape: one run of 16,000 backslashes, or 32 runs of 500. A
  // search linear in a run's length takes as long over either; one that tries each position of a run again (no
  // look-behind on a secret's first unit) takes 32 times as long over the long run, about half a second.
  const redactor = textRedactor([KEY]);
  const long = `\\u${"\\".repeat(16_000)}`;
  const short = `\\u${`${"\\".repeat(499)}x`.repeat(32)}`;
  assert.equal(long.length, short.length);
  redactor.text(short);
  const ratio = fastest(() => redactor.text(long)) / Math.max(fastest(() => redactor.text(short)), 0.01);
  assert.ok(ratio < 6, `one long run took ${ratio.toFixed(1)} times as long as as many short ones`);
});
