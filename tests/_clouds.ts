/**
 * @module A gateway whose Claude models are served by the fake Bedrock and the fake Vertex (and, for failover, by an
 * Anthropic deployment on the ordinary fake upstream), with the cloud credentials in its environment.
 */
import { BEDROCK_CREDENTIALS, type FakeBedrock, fakeBedrock } from "./_fake_bedrock.ts";
import { type FakeUpstream, fakeUpstream } from "./_fake_upstream.ts";
import { type FakeVertex, fakeVertex, type FakeVertexOptions } from "./_fake_vertex.ts";
import { startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** The upstream ids the fakes are asked for. */
export const BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
export const VERTEX_MODEL = "claude-sonnet-4-5@20250929";

/** A running set-up: the gateway, the fakes, and a token of the "cloud" group. */
export interface Clouds extends AsyncDisposable {
  gw: TestGateway;
  bedrock: FakeBedrock;
  vertex: FakeVertex;
  anthropic: FakeUpstream;
  token: string;
  /** POSTs JSON to the gateway with the cloud group's token. */
  post(path: string, body: unknown, headers?: HeadersInit): Promise<Response>;
}

/**
 * Options: the clock both the gateway and the fakes read, the fake Vertex's token lifetime, more gateway options
 * (`{vertex}` in `extraUpstreams` stands for the fake Vertex's URL).
 */
export interface CloudOptions extends StartOptions {
  clock?: { now: number };
  vertex?: FakeVertexOptions;
  /** YAML for the Bedrock upstream's extra keys, in flow style (e.g. `api_key_env: BEDROCK_KEY`). */
  bedrockKeys?: string;
}

/**
 * Models: claude-bedrock (Bedrock only), claude-vertex (Vertex only), claude-both (an Anthropic deployment tried
 * first, then Bedrock, then Vertex).
 */
export async function startClouds(options: CloudOptions = {}): Promise<Clouds> {
  const now = options.clock ? () => options.clock!.now : Date.now;
  const bedrock = fakeBedrock({ now, apiKey: "bedrock-api-key-0001" });
  const vertex = await fakeVertex({ now, ...options.vertex });
  const anthropic = fakeUpstream();
  const extra = options.bedrockKeys ? `, ${options.bedrockKeys}` : "";
  const gw = await startGateway(anthropic.url, {
    ...options,
    now: options.clock ? () => new Date(options.clock!.now) : undefined,
    env: {
      AWS_ACCESS_KEY_ID: BEDROCK_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: BEDROCK_CREDENTIALS.secretAccessKey,
      AWS_SESSION_TOKEN: BEDROCK_CREDENTIALS.sessionToken!,
      GOOGLE_APPLICATION_CREDENTIALS: vertex.credentialsFile,
      ...options.env,
    },
    extraUpstreams: `
  - { name: first, protocol: anthropic, base_url: ${anthropic.url}/first/v1, api_key_env: TEST_ANTHROPIC_KEY,
      priority: 2, timeout_ms: 5000, models: [claude-both] }
  - { name: bedrock, protocol: anthropic-bedrock, region: us-east-1, base_url: "${bedrock.url}", priority: 1,
      timeout_ms: 5000${extra},
      models: [{ id: claude-bedrock, upstream_id: "${BEDROCK_MODEL}" }, { id: claude-both, upstream_id: "${BEDROCK_MODEL}" }] }
  - { name: vertex, protocol: anthropic-vertex, project: ${vertex.project}, region: ${vertex.region},
      base_url: "${vertex.url}", timeout_ms: 5000,
      models: [{ id: claude-vertex, upstream_id: "${VERTEX_MODEL}" }, { id: claude-both, upstream_id: "${VERTEX_MODEL}" }] }
${(options.extraUpstreams ?? "").replaceAll("{vertex}", vertex.url)}`,
    extraGroups: `  - { name: cloud, listing: auto, models: [claude-bedrock, claude-vertex, claude-both] }
${options.extraGroups ?? ""}`,
  });
  const token = (await gw.store.createToken({ group: "cloud" })).secret;
  return {
    gw,
    bedrock,
    vertex,
    anthropic,
    token,
    post: (path, body, headers) => gw.post(path, body, { "x-api-key": token, ...headers }),
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await anthropic[Symbol.asyncDispose]();
      await vertex[Symbol.asyncDispose]();
      await bedrock[Symbol.asyncDispose]();
    },
  };
}

/** Every secret the set-up holds: none may appear in a log line or a response. */
export function cloudSecrets(clouds: Clouds): string[] {
  return [
    BEDROCK_CREDENTIALS.secretAccessKey,
    BEDROCK_CREDENTIALS.sessionToken!,
    "bedrock-api-key-0001",
    clouds.vertex.privateKey.split("\n")[1],
    ...clouds.vertex.requests.map((r) => r.token),
    clouds.token,
  ];
}
