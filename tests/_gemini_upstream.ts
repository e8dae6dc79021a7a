/**
 * @module A Gemini API on the shared fake upstream: answers scripted turns, and refuses what the real API refuses
 * (a wrong key, roles other than user and model, unknown body fields, schema keywords outside its subset, and a
 * function call of the current turn without the thought signature the API gave it).
 *
 * One check is stricter than the real API's: the stand-in signature passes only for calls this fake did not make (a
 * history from another model), so a test sees it when a signature the fake gave, on the call or on another part of
 * the step, was lost on the way.
 */
import type { Responder, SeenRequest } from "./_fake_upstream.ts";

/** The key the test config gives the Gemini upstream. */
export const GEMINI_KEY = "upstream-gemini-key";

/** The YAML of a Gemini upstream on the fake, serving `gemini-test`, and of a group `gem` that uses it. */
export function geminiUpstreamYaml(url: string): { extraUpstreams: string; extraGroups: string } {
  return {
    extraUpstreams: `  - name: gem
    protocol: gemini
    base_url: ${url}/gem/v1beta
    api_key_env: TEST_GEMINI_KEY
    models: [gemini-test]
`,
    extraGroups: "  - { name: gem, listing: anthropic, models: [gemini-test] }\n",
  };
}

type Obj = Record<string, unknown>;

/** One scripted answer: its parts, finish and usage. */
export interface GeminiTurn {
  parts: Obj[];
  finishReason?: string;
  usageMetadata?: Obj;
}

const BODY_FIELDS = new Set([
  "contents",
  "systemInstruction",
  "tools",
  "toolConfig",
  "generationConfig",
  "safetySettings",
  "cachedContent",
]);
const SCHEMA_FIELDS = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "maxItems",
  "minItems",
  "properties",
  "required",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "example",
  "anyOf",
  "propertyOrdering",
  "default",
  "items",
  "minimum",
  "maximum",
]);

function refuse(message: string, status = 400, name = "INVALID_ARGUMENT"): Response {
  return Response.json({ error: { code: status, message, status: name } }, { status });
}

/** The first keyword outside Gemini's Schema, with its path, or undefined. */
function badKeyword(schema: unknown, path: string): string | undefined {
  if (typeof schema !== "object" || schema === null) return undefined;
  for (const [key, value] of Object.entries(schema as Obj)) {
    if (!SCHEMA_FIELDS.has(key)) return `${path}.${key}`;
    if (key === "properties") {
      for (const [name, inner] of Object.entries(value as Obj)) {
        const bad = badKeyword(inner, `${path}.properties.${name}`);
        if (bad) return bad;
      }
    } else if (key === "items") {
      const bad = badKeyword(value, `${path}.items`);
      if (bad) return bad;
    } else if (key === "anyOf") {
      for (const [i, inner] of (value as unknown[]).entries()) {
        const bad = badKeyword(inner, `${path}.anyOf[${i}]`);
        if (bad) return bad;
      }
    }
  }
  return undefined;
}

/** What identifies a step the fake answered with calls: its first call. */
function stepKey(call: unknown): string {
  const { name, args } = (call ?? {}) as Obj;
  return JSON.stringify([name, args ?? {}]);
}

/** The signatures the fake gave: every one, and the one of each step with calls, by its first call. */
interface Given {
  all: Set<string>;
  steps: Map<string, string>;
}

/** What the real API checks of a request, as a refusal, or undefined when it passes. */
function check(seen: SeenRequest, given: Given, vertex: boolean): Response | undefined {
  // Vertex takes the service account's token instead, which its fake has checked already.
  if (!vertex && seen.headers.get("x-goog-api-key") !== GEMINI_KEY) {
    return refuse("API key not valid. Please pass a valid API key.", 400);
  }
  const body = seen.body ?? {};
  // The Gemini API's countTokens takes the request wrapped; Vertex's takes its fields themselves.
  const request = seen.path.endsWith(":countTokens") && !vertex ? body.generateContentRequest as Obj ?? {} : body;
  for (const key of Object.keys(request)) {
    if (!BODY_FIELDS.has(key) && key !== "model") return refuse(`Invalid JSON payload received. Unknown name "${key}"`);
  }
  const contents = request.contents as Obj[];
  if (!Array.isArray(contents) || contents.length === 0) return refuse("contents is not specified");
  for (const [i, content] of contents.entries()) {
    if (content.role !== "user" && content.role !== "model") {
      return refuse(`Please use a valid role: user, model. (contents[${i}])`);
    }
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return refuse(`contents[${i}].parts must not be empty`);
    }
  }
  for (const tool of (request.tools ?? []) as Obj[]) {
    for (const fn of (tool.functionDeclarations ?? []) as Obj[]) {
      const bad = badKeyword(fn.parameters, `${fn.name}.parameters`);
      if (bad) return refuse(`Invalid JSON payload received. Unknown name at ${bad}`);
    }
  }
  // The current turn starts at the last user content with something other than function responses.
  let start = 0;
  contents.forEach((content, i) => {
    const parts = content.parts as Obj[];
    if (content.role === "user" && parts.some((p) => !p.functionResponse)) start = i;
  });
  for (const [i, content] of contents.entries()) {
    if (i < start || content.role !== "model") continue;
    const parts = content.parts as Obj[];
    const first = parts.find((p) => p.functionCall);
    if (!first) continue;
    const signature = first.thoughtSignature;
    const mine = given.steps.get(stepKey(first.functionCall));
    if (signature === undefined || (mine && !parts.some((p) => p.thoughtSignature === mine))) {
      return refuse(`Function call is missing a thought_signature in functionCall parts. (contents[${i}])`);
    }
    if (signature !== "skip_thought_signature_validator" && !given.all.has(String(signature))) {
      return refuse(`Corrupted thought signature. (contents[${i}])`);
    }
  }
  return undefined;
}

/**
 * A Gemini upstream that answers `turns` in order (the last one again when they run out), or what `turns` makes of
 * each request; on Vertex with `vertex`.
 */
export function geminiResponder(turns: GeminiTurn[] | ((body: Obj) => GeminiTurn), vertex = false): Responder {
  const given: Given = { all: new Set(), steps: new Map() };
  let next = 0;
  return (seen) => {
    const refused = check(seen, given, vertex);
    if (refused) return refused;
    if (seen.path.endsWith(":countTokens")) return Response.json({ totalTokens: 42 });
    const turn = typeof turns === "function" ? turns(seen.body ?? {}) : turns[Math.min(next++, turns.length - 1)];
    for (const part of turn.parts) if (typeof part.thoughtSignature === "string") given.all.add(part.thoughtSignature);
    const call = turn.parts.find((p) => p.functionCall);
    const signed = turn.parts.find((p) => typeof p.thoughtSignature === "string");
    if (call && signed) given.steps.set(stepKey(call.functionCall), String(signed.thoughtSignature));
    const usageMetadata = turn.usageMetadata ?? { promptTokenCount: 20, candidatesTokenCount: 5, totalTokenCount: 25 };
    const finishReason = turn.finishReason ?? "STOP";
    const chunk = (parts: Obj[], last: boolean) => ({
      candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason } : {}) }],
      usageMetadata,
      modelVersion: "gemini-test-001",
      responseId: "resp-gem-1",
    });
    if (!seen.path.endsWith(":streamGenerateContent")) return Response.json(chunk(turn.parts, true));
    if (!seen.search.includes("alt=sse")) return refuse("the fake answers streams as SSE only");
    const events = turn.parts.map((part, i) => chunk([part], i === turn.parts.length - 1));
    const text = events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join("");
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  };
}
