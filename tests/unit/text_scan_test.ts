/**
 * @module A text scanned in pieces ends the same as the whole text scanned at once, wherever it is cut: each kind's
 * match split at every position across two pieces is still masked, and a channel holds back only the end that could
 * begin a match; restore turns only this request's own placeholders back, JSON-encoded inside JSON text.
 */
import assert from "node:assert/strict";
import { DETECTORS, KIND_GROUPS } from "../../src/core/detectors.ts";
import { compileDetector, type GuardRun, scanRule, scanText, textChannel } from "../../src/core/text_scan.ts";

const ALL = [...KIND_GROUPS.secrets, ...KIND_GROUPS.pii].map((kind) => compileDetector(DETECTORS[kind]));
const MASK = [scanRule({ name: "all", action: "mask", restore: true, detectors: ALL })];

function newRun(): GuardRun {
  return {
    hits: [],
    restores: new Map(),
    tag: (text) =>
      [...text].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7).toString(16).padStart(6, "0").slice(-6),
  };
}

const SAMPLES = [
  "key AKIAXLNXB4EI6OCLOY6V here",
  "t=ghp_ewA7huWJGZdRcWVrjDUcOIGo25MsKxzbpUig;",
  "mail jane.doe@acme-corp.io now",
  "card 4111 1111 1111 1111 ok",
  "iban DE89 3704 0044 0532 0130 00.",
  "call +44 20 7946 0958 today",
  "ssn 512-44-7890!",
  "x sk_live_7NLRwHlZvuCjp0xEFZo1zcfI y",
];

Deno.test("a match split at any position across two pieces is masked as in the whole text", () => {
  for (const text of SAMPLES) {
    const whole = scanText(text, MASK, newRun(), { scope: "output" });
    assert.notEqual(whole, text);
    for (let cut = 0; cut <= text.length; cut++) {
      const channel = textChannel(MASK, newRun(), { scope: "output" });
      const out = channel.push(text.slice(0, cut)) + channel.push(text.slice(cut)) + channel.end();
      assert.equal(out, whole, `${text} cut at ${cut}`);
    }
  }
});

Deno.test("a text delivered a character at a time comes out masked, and ordinary prose is not held", () => {
  for (const text of SAMPLES) {
    const channel = textChannel(MASK, newRun(), { scope: "output" });
    let out = "";
    for (const char of text) out += channel.push(char);
    assert.equal(out + channel.end(), scanText(text, MASK, newRun(), { scope: "output" }));
  }
  const channel = textChannel(MASK, newRun(), { scope: "output" });
  assert.equal(channel.push("Hello, how are you? "), "Hello, how are you? ");
  assert.equal(channel.holding(), false);
});

Deno.test("restore turns this request's placeholders back, and leaves others", () => {
  const run = newRun();
  const masked = scanText("AKIAXLNXB4EI6OCLOY6V", MASK, run, { scope: "input" });
  const foreign = "[REDACTED:aws_access_key:000000]";
  const answer = `use ${masked} not ${foreign}`;
  const channel = textChannel([], run, { scope: "output" });
  const pieces = [answer.slice(0, 9), answer.slice(9, 20), answer.slice(20)];
  assert.equal(pieces.map((p) => channel.push(p)).join("") + channel.end(), `use AKIAXLNXB4EI6OCLOY6V not ${foreign}`);
  const pem = "-----BEGIN PRIVATE KEY-----\n" + "A".repeat(30) +
    "bcdefghijklmnopqrstuvwxyz0123456789\n-----END PRIVATE KEY-----";
  const key = scanText(pem, MASK, run, { scope: "input" });
  assert.equal(scanText(`{"k":"${key}"}`, [], run, { scope: "output", json: true }), `{"k":${JSON.stringify(pem)}}`);
});

Deno.test("a blocking rule refuses naming the rule and the kind, never the match", () => {
  const block = [scanRule({ name: "no-keys", action: "block", restore: false, detectors: ALL })];
  assert.throws(() => scanText("AKIAXLNXB4EI6OCLOY6V", block, newRun(), { scope: "input" }), (err: Error) => {
    assert.match(err.message, /guardrail "no-keys".*aws_access_key/);
    assert.doesNotMatch(err.message, /AKIA/);
    return true;
  });
});
