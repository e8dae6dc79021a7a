/**
 * @module The admin API's inputs as strict zod schemas, shared by the HTTP API and the CLI, and the one
 * function that turns a failed parse into a 400 naming the field.
 */
import { z } from "zod";
import { PERSON_ROLES } from "../core/auth_config.ts";
import { LimitsSchema } from "../core/config.ts";
import { McpGrantSchema } from "../core/mcp_config.ts";
import { EmailText } from "../core/email.ts";
import { KeyText } from "../core/key_text.ts";
import { firstProblem, invalidField } from "../core/validation.ts";

const Name = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be 1 to 64 letters, digits, '_', '.' or '-'");
const Label = z.string().min(1).max(100);
const Listing = z.enum(["anthropic", "openai", "auto"]);
const Models = z.array(z.string().min(1)).max(1000);
/** The names of the config's guardrails a group applies, in order. */
const GuardrailNames = z.array(z.string().min(1).max(100)).max(100);
/** A person's email, as a token's owner, read as sign-in reads it (see core/email.ts), so one person is one owner. */
export const Email = z.string().max(254).pipe(EmailText);

/** POST /admin/tokens */
export const TokenCreate = z.strictObject({
  group: Name,
  name: Label.optional(),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
  limits: LimitsSchema.optional(),
  owner: Email.optional(),
});

/** PATCH /admin/tokens/{id}; `null` clears expires_at or limits. */
export const TokenUpdate = z.strictObject({
  name: Label.optional(),
  group: Name.optional(),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
  disabled: z.boolean().optional(),
  limits: LimitsSchema.nullable().optional(),
});

/** POST /admin/groups */
export const GroupCreate = z.strictObject({
  name: Name,
  listing: Listing,
  models: Models,
  limits: LimitsSchema.optional(),
  mcp: McpGrantSchema.optional(),
  guardrails: GuardrailNames.optional(),
});

/** PATCH /admin/groups/{name}; `null` clears limits, the MCP grant or the guardrails. */
export const GroupUpdate = z.strictObject({
  listing: Listing.optional(),
  models: Models.optional(),
  limits: LimitsSchema.nullable().optional(),
  mcp: McpGrantSchema.nullable().optional(),
  guardrails: GuardrailNames.nullable().optional(),
});

/** A calendar date that exists (2026-02-30 does not). */
const Day = z.string().refine((text) => {
  const at = Date.parse(`${text}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(at) && new Date(at).toISOString().startsWith(text);
}, "must be a date (YYYY-MM-DD)");

const Since = z.union([Day, z.string().regex(/^[1-9]\d{0,4}[smhdw]$/)], {
  error: "must be a date (YYYY-MM-DD) or a duration such as 7d",
});

/** GET /admin/usage query. */
export const UsageQuery = z.strictObject({
  /** "owner" sums each person's tokens (tokens without an owner are left out). */
  by: z.enum(["token", "owner", "group", "model", "session", "server", "tool", "day"]).default("token"),
  since: Since.default("7d"),
  until: Day.optional(),
  name: KeyText.optional(),
  /** "day" keeps each day's totals apart: one row per day and name. */
  per: z.enum(["day"]).optional(),
});

/** GET /admin/requests query. */
export const LogQuery = z.strictObject({
  token: KeyText.optional(),
  owner: Email.optional(),
  group: KeyText.optional(),
  model: KeyText.optional(),
  session: KeyText.optional(),
  status: z.coerce.number().int().min(100).max(599).optional(),
  upstream: KeyText.optional(),
  affinity: z.enum(["kept", "made", "moved"]).optional(),
  since: Since.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** GET /admin/audit query; `cursor` is the `next_cursor` of the page before. */
export const AuditQuery = z.strictObject({
  actor: z.string().min(1).max(200).optional(),
  action: z.string().regex(/^[a-z_]{1,40}\.[a-z_]{1,40}$/, "must be an action such as token.revoke").optional(),
  since: Since.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(100).optional(),
});

/** The roles an operator key can have. */
const Role = z.enum(["owner", "admin", "viewer"]);

/** POST /admin/operator-keys; without expires_at a key lasts 90 days. */
export const OperatorKeyCreate = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.@+-]{1,100}$/, "must be 1 to 100 letters, digits, '_', '.', '@', '+' or '-'")
    .refine((name) => name !== "cli", 'must not be "cli", which names the CLI in the audit trail'),
  role: Role,
  expires_at: z.iso.datetime({ offset: true }).optional(),
});

/** PUT /admin/people/{email}: the role a person has from now on, beating the config's rules. */
export const PersonUpdate = z.strictObject({
  role: z.enum(PERSON_ROLES),
  /** The token groups the person may mint their own tokens in; none when absent. */
  token_groups: z.array(z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a group's name")).max(100).default([]),
});

/** Parses `input` or throws a 400 whose message and `param` name the first field at fault. */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const { field, message } = firstProblem(result.error, input);
  throw invalidField(field || "body", message);
}
