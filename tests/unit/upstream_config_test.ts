/**
 * @module Cloud upstreams in the config (keys per kind, base URLs from regions, errors that name the field) and the
 * transports built from them (which credentials each needs, and problems that name variables, never values).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/core/config.ts";
import { parseConfig } from "../../src/core/config_load.ts";
import { createTransports, type TransportIo } from "../../src/providers/mod.ts";

function config(upstream: string): Config {
  return parseConfig(`upstreams:\n  - ${upstream}\ngroups: [{ name: g, listing: auto, models: [m] }]\n`, "unit.yaml");
}

const AZURE = "{ name: az, protocol: azure-openai, base_url: 'https://r.openai.azure.com/openai/v1/', models: [m]";
const ENTRA = "entra: { tenant_id: contoso.onmicrosoft.com, client_id: app-1, client_secret_env: AZURE_CLIENT_SECRET }";

const PARSED = [
  {
    name: "Azure OpenAI takes the Responses API by default and keeps its key's variable",
    yaml: `${AZURE}, api_key_env: AZURE_OPENAI_API_KEY }`,
    want: { base_url: "https://r.openai.azure.com/openai/v1", api: "responses", api_key_env: "AZURE_OPENAI_API_KEY" },
  },
  {
    name: "Azure OpenAI with Entra ID signs in at the public cloud for Azure OpenAI's scope by default",
    yaml: `${AZURE}, api: chat, ${ENTRA} }`,
    want: {
      api: "chat",
      entra: {
        tenant_id: "contoso.onmicrosoft.com",
        client_id: "app-1",
        client_secret_env: "AZURE_CLIENT_SECRET",
        authority: "https://login.microsoftonline.com",
        scope: "https://cognitiveservices.azure.com/.default",
      },
    },
  },
  {
    name: "Azure OpenAI with Entra ID keeps another authority (without its trailing slash) and scope",
    yaml: `${AZURE}, ${
      ENTRA.replace("}", ", authority: 'https://login.microsoftonline.us/', scope: 'https://ai.azure.com/.default' }")
    } }`,
    want: {
      entra: {
        tenant_id: "contoso.onmicrosoft.com",
        client_id: "app-1",
        client_secret_env: "AZURE_CLIENT_SECRET",
        authority: "https://login.microsoftonline.us",
        scope: "https://ai.azure.com/.default",
      },
    },
  },
  {
    name: "Bedrock derives its base URL from the region and takes the AWS variables by default",
    yaml: "{ name: b, protocol: anthropic-bedrock, region: eu-west-3, models: [m] }",
    want: {
      base_url: "https://bedrock-runtime.eu-west-3.amazonaws.com",
      aws_access_key_id_env: "AWS_ACCESS_KEY_ID",
      aws_secret_access_key_env: "AWS_SECRET_ACCESS_KEY",
      aws_session_token_env: "AWS_SESSION_TOKEN",
    },
  },
  {
    name: "Bedrock keeps a configured base URL (a VPC endpoint) without its trailing slash",
    yaml: "{ name: b, protocol: anthropic-bedrock, region: us-east-1, base_url: 'https://vpce.example/', models: [m] }",
    want: { base_url: "https://vpce.example" },
  },
  {
    name: "Vertex derives a regional base URL and reads GOOGLE_APPLICATION_CREDENTIALS by default",
    yaml: "{ name: v, protocol: anthropic-vertex, project: my-project, region: us-east5, models: [m] }",
    want: {
      base_url: "https://us-east5-aiplatform.googleapis.com",
      credentials_file_env: "GOOGLE_APPLICATION_CREDENTIALS",
    },
  },
  {
    name: "Vertex's global region uses the global endpoint",
    yaml: "{ name: v, protocol: anthropic-vertex, project: p-1, region: global, models: [m] }",
    want: { base_url: "https://aiplatform.googleapis.com" },
  },
  {
    name: "a cloud takes its own list of betas",
    yaml:
      "{ name: v, protocol: anthropic-vertex, project: p-1, region: eu, betas: [context-1m-2025-08-07], models: [m] }",
    want: { base_url: "https://aiplatform.eu.rep.googleapis.com", betas: ["context-1m-2025-08-07"] },
  },
];
for (const c of PARSED) {
  Deno.test(`parseConfig(): ${c.name}`, () => {
    const upstream = config(c.yaml).upstreams[0] as Record<string, unknown>;
    for (const [key, value] of Object.entries(c.want)) assert.deepEqual(upstream[key], value, key);
  });
}

const REFUSED = [
  {
    name: "a Bedrock upstream without a region",
    yaml: "{ name: b, protocol: anthropic-bedrock, models: [m] }",
    want: /upstreams\[0\]\.region: is required$/,
  },
  {
    name: "a Vertex key on a Bedrock upstream",
    yaml: "{ name: b, protocol: anthropic-bedrock, region: us-east-1, project: p, models: [m] }",
    want: /upstreams\[0\]\.project: is not a known field$/,
  },
  {
    name: "an API key upstream without its key variable",
    yaml: "{ name: a, protocol: anthropic, base_url: 'https://x', models: [m] }",
    want: /upstreams\[0\]\.api_key_env/,
  },
  {
    name: "a protocol no upstream kind speaks",
    yaml: "{ name: a, protocol: bedrock, region: us-east-1, models: [m] }",
    want: /upstreams\[0\]\.protocol: .*'anthropic-bedrock' \| 'anthropic-vertex'/,
  },
  {
    name: "an Azure upstream with neither a key nor Entra ID",
    yaml: `${AZURE} }`,
    want: /upstreams\[0\]\.api_key_env: is required \(or entra, for Microsoft Entra ID\)$/,
  },
  {
    name: "an Azure upstream with both a key and Entra ID",
    yaml: `${AZURE}, api_key_env: K, ${ENTRA} }`,
    want: /upstreams\[0\]\.entra: cannot be combined with api_key_env/,
  },
  {
    name: "an Azure base URL with an api-version",
    yaml: `${AZURE.replace("v1/", "v1?api-version=2025-04-01-preview")}, api_key_env: K }`,
    want: /upstreams\[0\]\.base_url: must not have a query: the v1 API .* takes no api-version$/,
  },
  {
    name: "an Azure base URL of the older per-deployment shape",
    yaml: `${AZURE.replace("v1/", "deployments/my-gpt")}, api_key_env: K }`,
    want: /upstreams\[0\]\.base_url: must not name a deployment/,
  },
  {
    name: "an Azure API that is neither responses nor chat",
    yaml: `${AZURE}, api: assistants, api_key_env: K }`,
    want: /upstreams\[0\]\.api: .*"responses"\|"chat"/,
  },
  {
    name: "Entra ID without the client secret's variable",
    yaml: `${AZURE}, ${ENTRA.replace(", client_secret_env: AZURE_CLIENT_SECRET", "")} }`,
    want: /upstreams\[0\]\.entra\.client_secret_env: is required$/,
  },
  {
    name: "Entra ID with the secret itself in the file",
    yaml: `${AZURE}, ${ENTRA.replace("AZURE_CLIENT_SECRET", "AZURE_CLIENT_SECRET, client_secret: s3cret")} }`,
    want: /upstreams\[0\]\.entra\.client_secret: is not a known field$/,
  },
  {
    name: "a tenant that would change the token URL's path",
    yaml: `${AZURE}, ${ENTRA.replace("contoso.onmicrosoft.com", "../common")} }`,
    want: /upstreams\[0\]\.entra\.tenant_id: must be letters/,
  },
  {
    name: "a project id that would change the URL's path",
    yaml: "{ name: v, protocol: anthropic-vertex, project: ../x, region: us-east5, models: [m] }",
    want: /upstreams\[0\]\.project: must be letters/,
  },
];
for (const c of REFUSED) {
  Deno.test(`parseConfig() refuses ${c.name}, naming the field`, () => {
    assert.throws(() => config(c.yaml), (err: Error) => {
      assert.match(err.message, c.want);
      return true;
    });
  });
}

function io(env: Record<string, string>, files: Record<string, string> = {}): TransportIo {
  return {
    env: (name) => env[name],
    fetch,
    now: () => new Date(),
    log: () => {},
    readTextFile: (path) => {
      if (!(path in files)) throw new Deno.errors.NotFound(`No such file: ${path}`);
      return files[path];
    },
  };
}

const BEDROCK = "{ name: b, protocol: anthropic-bedrock, region: us-east-1, models: [m] }";
const VERTEX = "{ name: v, protocol: anthropic-vertex, project: p-1, region: us-east5, models: [m] }";
const ACCOUNT = JSON.stringify({
  type: "service_account",
  client_email: "a@p-1.iam.gserviceaccount.com",
  private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
  token_uri: "https://oauth2.googleapis.com/token",
});

const CREDENTIALS: { name: string; yaml: string; env: Record<string, string>; problem?: string }[] = [
  {
    name: "Bedrock with both AWS variables",
    yaml: BEDROCK,
    env: { AWS_ACCESS_KEY_ID: "id", AWS_SECRET_ACCESS_KEY: "s" },
  },
  {
    name: "Bedrock without its secret",
    yaml: BEDROCK,
    env: { AWS_ACCESS_KEY_ID: "id" },
    problem: "AWS_SECRET_ACCESS_KEY is not set",
  },
  {
    name: "Bedrock with neither AWS variable",
    yaml: BEDROCK,
    env: {},
    problem: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
  },
  {
    name: "Bedrock with a Bedrock API key variable that is unset (no fallback to other credentials)",
    yaml: BEDROCK.replace("models", "api_key_env: BEDROCK_KEY, models"),
    env: { AWS_ACCESS_KEY_ID: "id", AWS_SECRET_ACCESS_KEY: "s" },
    problem: "BEDROCK_KEY is not set",
  },
  { name: "Azure OpenAI with its key", yaml: `${AZURE}, api_key_env: AZURE_KEY }`, env: { AZURE_KEY: "k" } },
  {
    name: "Azure OpenAI without its key",
    yaml: `${AZURE}, api_key_env: AZURE_KEY }`,
    env: {},
    problem: "AZURE_KEY is not set",
  },
  { name: "Azure OpenAI with Entra ID's secret", yaml: `${AZURE}, ${ENTRA} }`, env: { AZURE_CLIENT_SECRET: "s" } },
  {
    name: "Azure OpenAI with Entra ID but not its secret (a key variable set is not used instead)",
    yaml: `${AZURE}, ${ENTRA} }`,
    env: { AZURE_OPENAI_API_KEY: "k" },
    problem: "AZURE_CLIENT_SECRET is not set",
  },
  { name: "Vertex with a readable key file", yaml: VERTEX, env: { GOOGLE_APPLICATION_CREDENTIALS: "/sa.json" } },
  { name: "Vertex without its variable", yaml: VERTEX, env: {}, problem: "GOOGLE_APPLICATION_CREDENTIALS is not set" },
  {
    name: "Vertex with a file that is not there",
    yaml: VERTEX,
    env: { GOOGLE_APPLICATION_CREDENTIALS: "/missing.json" },
    problem: "GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be used",
  },
  {
    name: "Vertex with a file that lacks the private key",
    yaml: VERTEX,
    env: { GOOGLE_APPLICATION_CREDENTIALS: "/broken.json" },
    problem:
      'GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be used (Cannot read service-account file: "private_key" is missing)',
  },
];
const FILES = { "/sa.json": ACCOUNT, "/broken.json": JSON.stringify({ ...JSON.parse(ACCOUNT), private_key: "" }) };
for (const c of CREDENTIALS) {
  Deno.test(`createTransports(): ${c.name}`, () => {
    const [built] = createTransports(config(c.yaml).upstreams, io(c.env, FILES)).values();
    assert.equal(built.problem, c.problem);
    assert.equal(built.transport === undefined, c.problem !== undefined);
    // A problem names variables, never a value or a path.
    if (built.problem) assert.ok(!/missing\.json|\bid\b/.test(built.problem));
  });
}

/** The ```yaml blocks of a Markdown file. */
function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]);
}

Deno.test("docs/clouds.md: every config example parses as written (snippets inside a minimal config)", () => {
  const blocks = yamlBlocks(Deno.readTextFileSync(new URL("../../docs/clouds.md", import.meta.url)));
  assert.equal(blocks.length, 6);
  const whole = parseConfig(blocks[0], "clouds.md");
  assert.deepEqual(whole.upstreams.map((u) => u.protocol), ["anthropic", "anthropic-bedrock", "anthropic-vertex"]);
  for (const snippet of blocks.slice(1)) {
    const model = /\{ id: ([\w.-]+)/.exec(snippet)![1];
    const parsed = parseConfig(
      `upstreams:\n${snippet}groups: [{ name: g, listing: auto, models: [${model}] }]\n`,
      "clouds.md",
    );
    assert.match(parsed.upstreams[0].protocol, /^(anthropic-(bedrock|vertex)|gemini-vertex|azure-openai)$/);
  }
});

Deno.test("config/gateway.example.yaml: the commented cloud upstreams parse once uncommented", () => {
  const example = Deno.readTextFileSync(new URL("../../config/gateway.example.yaml", import.meta.url));
  // A commented upstream's lines are "  # - name" and "  #   key"; the prose above them stays a comment.
  const uncommented = example.replace(/^ {2}# (?=- | {2})/gm, "  ");
  assert.notEqual(uncommented, example);
  const parsed = parseConfig(uncommented, "example");
  const clouds = parsed.upstreams.filter((u) => u.protocol.startsWith("anthropic-") || u.protocol === "azure-openai");
  assert.deepEqual(clouds.map((u) => [u.name, u.base_url]), [
    ["azure", "https://my-resource.openai.azure.com/openai/v1"],
    ["bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com"],
    ["vertex", "https://us-east5-aiplatform.googleapis.com"],
  ]);
  // The Entra ID line, uncommented in place of the key, parses too.
  const entra = uncommented.replace(/ {4}api_key_env: AZURE_OPENAI_API_KEY.*\n {4}# /, "    ");
  assert.notEqual(entra, uncommented);
  const azure = parseConfig(entra, "example").upstreams.find((u) => u.name === "azure")!;
  assert.ok(azure.protocol === "azure-openai" && azure.entra?.client_secret_env === "AZURE_CLIENT_SECRET");
});

Deno.test("docs/configuration.md: the reference config parses, and with Entra ID in place of the Azure key", () => {
  const [reference] = yamlBlocks(Deno.readTextFileSync(new URL("../../docs/configuration.md", import.meta.url)));
  const parsed = parseConfig(reference, "configuration.md");
  assert.ok(parsed.upstreams.some((u) => u.protocol === "azure-openai" && u.api_key_env === "AZURE_OPENAI_API_KEY"));
  const entra = reference.replace(/ api_key_env: AZURE_OPENAI_API_KEY.*\n {4}# entra:/, " entra:")
    .replace(/\n {4}# {10}authority/, "\n             authority");
  assert.notEqual(entra, reference);
  const azure = parseConfig(entra, "configuration.md").upstreams.find((u) => u.protocol === "azure-openai")!;
  assert.ok(azure.protocol === "azure-openai");
  assert.deepEqual(azure.entra, {
    tenant_id: "my-tenant-id",
    client_id: "my-app-id",
    client_secret_env: "AZURE_CLIENT_SECRET",
    authority: "https://login.microsoftonline.com",
    scope: "https://cognitiveservices.azure.com/.default",
  });
});
