/** @module The role rules: which rule a person matches (first match wins), and how `auth.oidc` is validated. */
import assert from "node:assert/strict";
import { type Grant, grantFor, type Person } from "../../src/access/roles.ts";
import type { RoleRule } from "../../src/core/config.ts";
import { parseConfig } from "../../src/core/config_load.ts";

const BASE = `upstreams:
  - { name: a, protocol: anthropic, base_url: "https://api.example.test/v1", api_key_env: KEY, models: [m] }
groups:
  - { name: default, listing: anthropic, models: [m] }
`;

/** The rules as an operator would write them, parsed as the gateway parses them. */
function rules(yaml: string): RoleRule[] {
  const config = parseConfig(
    `${BASE}auth:\n  oidc:\n    issuer: https://id.example.test\n    client_id: gw\n    client_secret_env: S\n` +
      `    roles:\n${yaml}`,
    "cfg.yaml",
  );
  return config.auth.oidc!.roles;
}

const RULES = rules(`
      - { group: platform-admins, role: admin }
      - { email: Carol@Example.com, role: viewer }
      - { domain: Example.COM, role: member, token_groups: [default, oa] }
      - { group: auditors, role: viewer }
      - { email: root@other.test, role: owner }
`);

const person = (email: string, groups: string[] = []): Person => ({ email, groups });

const CASES: { name: string; person: Person; want: Grant | undefined }[] = [
  { name: "a group of the claim", person: person("dave@else.test", ["platform-admins"]), want: admin() },
  {
    name: "the first match wins over a later one",
    person: person("carol@example.com", ["platform-admins"]),
    want: admin(),
  },
  { name: "an email, whatever its case", person: person("CAROL@example.com"), want: viewer() },
  { name: "a domain, whatever its case", person: person("bob@EXAMPLE.com"), want: member(["default", "oa"]) },
  { name: "an email rule before the domain rule", person: person("carol@example.com"), want: viewer() },
  { name: "a later group rule", person: person("erin@else.test", ["auditors"]), want: viewer() },
  { name: "an owner by email", person: person("root@other.test"), want: { role: "owner", token_groups: [] } },
  { name: "a group matched exactly, not by case", person: person("x@else.test", ["Platform-Admins"]), want: undefined },
  { name: "a subdomain is not the domain", person: person("bob@dev.example.com"), want: undefined },
  { name: "a domain inside the local part is not it", person: person("example.com@evil.test"), want: undefined },
  { name: "a look-alike domain", person: person("bob@example.com.evil.test"), want: undefined },
  { name: "nobody's rule", person: person("zed@nowhere.test", ["staff"]), want: undefined },
  {
    name: "an email with two @ is no address of the domain",
    person: person("x@evil.test@example.com"),
    want: undefined,
  },
  { name: "an email with two @ is no address", person: person("carol@example.com@x.test"), want: undefined },
  { name: "an email with spaces around it is that email", person: person(" carol@example.com "), want: viewer() },
  { name: "an email with a space inside is none", person: person("bob @example.com"), want: undefined },
];

function admin(): Grant {
  return { role: "admin", token_groups: [] };
}
function viewer(): Grant {
  return { role: "viewer", token_groups: [] };
}
function member(token_groups: string[]): Grant {
  return { role: "member", token_groups };
}

for (const c of CASES) {
  Deno.test(`grantFor: ${c.name}`, () => {
    assert.deepEqual(grantFor(c.person, RULES), c.want);
  });
}

Deno.test("a rule's email and domain are read with the space around them trimmed, and match without regard to case", () => {
  const trimmed = rules(
    "      - { email: ' Dan@Example.com ', role: viewer }\n      - { domain: ' Else.test', role: member }\n",
  );
  assert.deepEqual([trimmed[0].email, trimmed[1].domain], ["dan@example.com", "else.test"]);
  assert.deepEqual(grantFor(person("dan@example.com"), trimmed), viewer());
  assert.deepEqual(grantFor(person("eve@else.test"), trimmed), member([]));
});

Deno.test("grantFor answers a copy: changing it changes no rule", () => {
  const grant = grantFor(person("bob@example.com"), RULES)!;
  grant.token_groups.push("bulk");
  assert.deepEqual(grantFor(person("bob@example.com"), RULES), member(["default", "oa"]));
});

const CONFIG_ERRORS = [
  {
    name: "a rule with two matchers",
    yaml: "      - { group: g, email: a@b.test, role: admin }\n",
    want: /roles\[0\]/,
  },
  { name: "a rule with no matcher", yaml: "      - { role: admin }\n", want: /roles\[0\]: must have exactly one/ },
  { name: "an unknown role", yaml: "      - { group: g, role: god }\n", want: /roles\[0\]\.role/ },
  { name: "an email that is none", yaml: "      - { email: nobody, role: admin }\n", want: /roles\[0\]\.email/ },
  { name: "a domain that is none", yaml: "      - { domain: '@x', role: admin }\n", want: /roles\[0\]\.domain/ },
  {
    name: "an email with two @",
    yaml: "      - { email: 'a@evil.test@b.test', role: admin }\n",
    want: /roles\[0\]\.email: must be one email address/,
  },
  { name: "an unknown key", yaml: "      - { group: g, role: admin, tier: 1 }\n", want: /roles\[0\]\.tier/ },
  { name: "no rules at all", yaml: "      []\n", want: /auth\.oidc\.roles/ },
];

for (const c of CONFIG_ERRORS) {
  Deno.test(`auth.oidc is refused with ${c.name}`, () => {
    assert.throws(() => rules(c.yaml), c.want);
  });
}

Deno.test("auth.oidc: scopes must include openid, the secret is an env name, the issuer a URL", () => {
  const oidc = (fields: string) =>
    parseConfig(`${BASE}auth:\n  oidc: { ${fields}, roles: [{ group: g, role: admin }] }\n`, "cfg.yaml");
  const ok = "issuer: 'https://id.example.test', client_id: gw, client_secret_env: S";
  assert.deepEqual(oidc(ok).auth.oidc!.scopes, ["openid", "email", "profile"]);
  assert.throws(() => oidc(`${ok}, scopes: [email, groups]`), /auth\.oidc\.scopes: must include openid/);
  assert.throws(() => oidc(ok.replace("client_secret_env: S", "client_secret_env: 'sk-1 2'")), /client_secret_env/);
  assert.throws(() => oidc(ok.replace("'https://id.example.test'", "id.example.test")), /auth\.oidc\.issuer/);
  assert.throws(() => oidc(`${ok}, redirect_url: 'ftp://x.test/cb'`), /auth\.oidc\.redirect_url/);
  assert.equal(parseConfig(BASE, "cfg.yaml").auth.oidc, undefined);
});

/** The ```yaml blocks of a Markdown file, with the indentation of a block inside a list item taken off. */
function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```yaml\n([\s\S]*?)^ *```/gm)].map(([, indent, body]) =>
    body.split("\n").map((line) => line.slice(indent.length)).join("\n")
  );
}

Deno.test("docs: every auth example parses as written, and each provider's rules under a whole auth.oidc", () => {
  const docs = Deno.readTextFileSync(new URL("../../docs/running-for-a-team.md", import.meta.url));
  const blocks = yamlBlocks(docs);
  const whole = blocks.filter((block) => block.startsWith("auth:\n  oidc:"));
  const providers = blocks.filter((block) => block.startsWith("scopes:"));
  assert.equal(whole.length, 1);
  const personal = blocks.filter((block) => block.startsWith("auth:\n  personal_tokens:"));
  assert.equal(personal.length, 1);
  const tokens = parseConfig(`${BASE}${personal[0]}`, "running-for-a-team.md").auth.personal_tokens;
  assert.deepEqual(tokens, { default_days: 90, max_days: 90 }, "the example shows the defaults");
  assert.equal(providers.length, 4);
  const config = parseConfig(`${BASE}${whole[0]}`, "running-for-a-team.md");
  assert.deepEqual(config.auth.oidc!.roles.map((rule) => rule.role), ["admin", "viewer", "member"]);
  assert.deepEqual(config.auth.oidc!.roles[2].token_groups, ["default"]);
  for (const snippet of providers) {
    const indented = snippet.split("\n").map((line) => (line ? `    ${line}` : line)).join("\n");
    const parsed = parseConfig(
      `${BASE}auth:\n  oidc:\n    issuer: https://id.example.test\n    client_id: gw\n    client_secret_env: S\n${indented}`,
      "running-for-a-team.md",
    );
    assert.ok(parsed.auth.oidc!.roles.length >= 2);
    assert.ok(parsed.auth.oidc!.scopes!.includes("openid"));
  }
});
