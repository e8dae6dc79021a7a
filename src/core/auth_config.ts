/**
 * @module The config's `auth` section: sign-in through the team's OpenID Connect provider (its issuer, client and
 * scopes, the rules that give each person a role, and which of their email claims are believed), and the tokens people
 * make for themselves (their default and longest lifetime). The client secret never sits in the file: it names an
 * environment variable.
 */
import { z } from "zod";
import { EmailText } from "./email.ts";

/** The roles a person signed in through the identity provider can have; see src/access/roles.ts. */
export const PERSON_ROLES = ["owner", "admin", "viewer", "member"] as const;

/** One rule of `auth.oidc.roles`: exactly one of group, email or domain, the role it gives, and a member's groups. */
const RoleRule = z.strictObject({
  /** A value of the id_token's `groups` claim, matched exactly. */
  group: z.string().min(1).optional(),
  /** A person's email, matched without regard to case (see core/email.ts). */
  email: EmailText.optional(),
  /** The part of a person's email after its one @, exactly, without regard to case. */
  domain: z.string().transform((d) => d.trim().toLowerCase())
    .pipe(z.string().regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/, "must be a domain such as example.com")).optional(),
  role: z.enum(PERSON_ROLES),
  /** The token groups a person matched by this rule may mint their own tokens in. */
  token_groups: z.array(z.string().min(1)).default([]),
}).refine(
  (rule) => [rule.group, rule.email, rule.domain].filter((v) => v !== undefined).length === 1,
  "must have exactly one of group, email or domain",
);

const Oidc = z.strictObject({
  /**
   * The identity provider's issuer URL, exactly as its id_tokens' `iss` says it; its metadata is read from
   * `<issuer>/.well-known/openid-configuration`.
   */
  issuer: z.url({ protocol: /^https?$/ }),
  client_id: z.string().min(1),
  /** The name of the environment variable that holds the client secret (the secret never sits in the file). */
  client_secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable's name"),
  /** Where the provider sends the browser back; derived from the request's host (a public one) when absent. */
  redirect_url: z.url({ protocol: /^https?$/ }).optional(),
  scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be a scope token")).default([
    "openid",
    "email",
    "profile",
  ]).refine((scopes) => scopes.includes("openid"), "must include openid"),
  /** Checked in order; the first rule a person matches gives their role. A person matching none is refused. */
  roles: z.array(RoleRule).min(1),
  /**
   * Only an id_token whose `email_verified` is the boolean true is taken. False: one without the claim is taken too,
   * for a provider that verifies every email it sends and does not say so (Microsoft Entra ID).
   */
  require_email_verified: z.boolean().default(true),
});

/** Tokens people make for themselves: `modelgate login`'s, and a member's own in the console or the admin API. */
const PersonalTokens = z.strictObject({
  /** Days such a token works when its maker names no expiry (a login's always); 90, or max_days when less. */
  default_days: z.number().int().min(1).max(3660).optional(),
  /** The latest expiry a member may choose, in days from the token's creation. */
  max_days: z.number().int().min(1).max(3660).default(90),
}).refine((tokens) => (tokens.default_days ?? 0) <= tokens.max_days, {
  message: "must be at most max_days",
  path: ["default_days"],
}).transform((tokens) => ({ ...tokens, default_days: tokens.default_days ?? Math.min(90, tokens.max_days) }));

/**
 * The gateway as OAuth authorization server for its own /mcp (docs/mcp.md, "Signing in with OAuth"): on unless turned
 * off; how long an access token works (at most an hour) and how long a grant lasts without being refreshed.
 */
const McpOAuth = z.strictObject({
  enabled: z.boolean().default(true),
  access_token_minutes: z.number().int().min(1).max(60).default(60),
  refresh_token_days: z.number().int().min(1).max(365).default(30),
});

/** The `auth` section: how people sign in and the tokens they make for themselves. */
export const AuthSchema = z.strictObject({
  /** Sign-in to the console through the team's OpenID Connect provider. */
  oidc: Oidc.optional(),
  personal_tokens: PersonalTokens.default(PersonalTokens.parse({})),
  mcp_oauth: McpOAuth.default(McpOAuth.parse({})),
});
