/**
 * @module The config of guardrails: `guardrails` (rules that detect kinds of secrets and personal data or ask a policy
 * webhook, with their scopes and action) and the check that every group's `guardrails` names a rule; a bad pattern or
 * a webhook URL that is not http(s) is a start error naming its YAML path.
 */
import { z } from "zod";
import { CUSTOM_MAX, DETECTORS, KIND_GROUPS } from "./detectors.ts";
import { EnvName, HeaderName } from "./mcp_config.ts";

const KNOWN = [...Object.keys(KIND_GROUPS), ...Object.keys(DETECTORS)];

const Custom = z.strictObject({
  regex: z.string().min(1),
  /** The placeholder's kind: `[REDACTED:<kind>:…]`. */
  kind: z.string().regex(/^[a-z0-9_]{1,40}$/, "must be 1 to 40 lowercase letters, digits or '_'"),
  /** The longest text the pattern matches: a stream holds back up to this many characters for it. */
  max_length: z.number().int().min(1).max(65_536).default(CUSTOM_MAX),
});

const Detect = z.union([
  z.string().refine((name) => KNOWN.includes(name), { error: `must be one of ${KNOWN.join(", ")}` }),
  Custom,
]);

const Webhook = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }),
  /** Headers sent to the webhook, each value read from the environment variable named: `{ Authorization: ENV }`. */
  headers: z.record(HeaderName, EnvName).optional(),
  timeout_ms: z.number().int().min(10).max(60_000).default(1000),
  /** What a timeout or a failed call counts as: `block` refuses the request (fail closed), `allow` lets it pass. */
  on_error: z.enum(["block", "allow"]).default("block"),
});

/** One rule of `guardrails`. */
export const GuardrailSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be letters, digits, '_', '.' or '-'"),
  detect: z.array(Detect).min(1).optional(),
  webhook: Webhook.optional(),
  scope: z.array(z.enum(["input", "output", "tools"])).min(1).default(["input"]),
  action: z.enum(["mask", "block", "log"]).default("mask"),
  /** Mask only: a placeholder the model repeats is turned back into the original for the client. */
  restore: z.boolean().default(false),
}).superRefine((rule, ctx) => {
  if ((rule.detect === undefined) === (rule.webhook === undefined)) {
    ctx.addIssue({ code: "custom", message: "needs exactly one of detect and webhook", path: [] });
  }
  rule.detect?.forEach((item, i) => {
    if (typeof item === "string") return;
    let pattern: RegExp;
    try {
      pattern = new RegExp(item.regex, "g");
    } catch (err) {
      ctx.addIssue({
        code: "custom",
        message: `is not a valid pattern: ${(err as Error).message}`,
        path: ["detect", i, "regex"],
      });
      return;
    }
    if (pattern.test("")) {
      ctx.addIssue({ code: "custom", message: "matches the empty text", path: ["detect", i, "regex"] });
    }
  });
  if (rule.restore && rule.action !== "mask") {
    ctx.addIssue({ code: "custom", message: "is only for action: mask", path: ["restore"] });
  }
  if (rule.webhook && rule.scope.includes("output")) {
    ctx.addIssue({
      code: "custom",
      message: "a webhook checks input and tools: an output check would hold back the whole answer",
      path: ["scope"],
    });
  }
});

/** One guardrail rule as configured. */
export type GuardrailConfig = z.infer<typeof GuardrailSchema>;

/** The first problem with rule names and the groups' references to them, as `path: problem`; undefined when none. */
export function guardrailProblem(
  rules: readonly GuardrailConfig[],
  groups: readonly { guardrails?: readonly string[] }[],
): string | undefined {
  const names = new Set<string>();
  for (const [i, rule] of rules.entries()) {
    if (names.has(rule.name)) return `guardrails[${i}].name: duplicate guardrail "${rule.name}"`;
    names.add(rule.name);
  }
  for (const [i, group] of groups.entries()) {
    for (const [j, name] of (group.guardrails ?? []).entries()) {
      if (!names.has(name)) return `groups[${i}].guardrails[${j}]: no guardrail is named "${name}"`;
    }
  }
  return undefined;
}
