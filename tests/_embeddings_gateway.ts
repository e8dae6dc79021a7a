/** @module Test wiring for embeddings: a gateway whose upstreams serve embedding models on every upstream kind. */
import { BEDROCK_CREDENTIALS } from "./_fake_bedrock.ts";
import { openAiEmbeddings } from "./_fake_embeddings.ts";
import type { FakeUpstream } from "./_fake_upstream.ts";
import { startGateway, type StartOptions, type TestGateway, UPSTREAM_KEYS } from "./_helpers.ts";

/** The upstreams' keys the config's variables hold. */
export const EMBED_KEYS = {
  ...UPSTREAM_KEYS,
  TEST_AZURE_KEY: "azure-resource-key-embeddings-0123",
  TEST_GEMINI_KEY: "upstream-gemini-key-embeddings",
  AWS_ACCESS_KEY_ID: BEDROCK_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: BEDROCK_CREDENTIALS.secretAccessKey,
  AWS_SESSION_TOKEN: BEDROCK_CREDENTIALS.sessionToken!,
};

/** Where each kind of upstream lives; absent ones point at `url`. */
export interface EmbedUpstreams {
  url: string;
  bedrockUrl?: string;
  /** YAML list items added to `upstreams:`. */
  extra?: string;
  /** Models added to the group. */
  extraModels?: string[];
}

/** The config: an embedding model on each upstream kind, a chat model beside them, one group that has them all. */
export function embeddingsConfig(where: EmbedUpstreams, options: { maxBodyBytes?: number } = {}): string {
  const { url } = where;
  const models = ["embed-small", "ada", "gpt-test", "azure-embed", "gemini-embed", "titan", "cohere", "cohere-v4"];
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
max_body_bytes: ${options.maxBodyBytes ?? 4194304}
routing: { deadline_ms: 5000 }
upstreams:
  - name: oai
    protocol: openai
    base_url: ${url}/oai/v1
    api_key_env: TEST_OPENAI_KEY
    timeout_ms: 5000
    models:
      - { id: embed-small, upstream_id: text-embedding-3-small, kind: embedding, price: { input: 0.02 } }
      - { id: ada, upstream_id: text-embedding-ada-002, kind: embedding }
      - gpt-test
  - name: az
    protocol: azure-openai
    base_url: ${url}/azure/openai/v1
    api: chat
    api_key_env: TEST_AZURE_KEY
    models:
      - { id: azure-embed, upstream_id: text-embedding-3-small, kind: embedding }
  - name: gem
    protocol: gemini
    base_url: ${url}/gemini/v1beta
    api_key_env: TEST_GEMINI_KEY
    models:
      - { id: gemini-embed, upstream_id: gemini-embedding-001, kind: embedding }
  - name: aws
    protocol: anthropic-bedrock
    region: us-east-1
    base_url: ${where.bedrockUrl ?? url}
    models:
      - { id: titan, upstream_id: amazon.titan-embed-text-v2:0, kind: embedding, price: { input: 0.02 } }
      - { id: cohere, upstream_id: cohere.embed-english-v3, kind: embedding }
      - { id: cohere-v4, upstream_id: us.cohere.embed-v4:0, kind: embedding }
${where.extra ?? ""}
groups:
  - { name: default, listing: openai, models: [${[...models, ...where.extraModels ?? []].join(", ")}] }
usage: { flush_ms: 60000, auth_refresh_ms: 100 }
`;
}

/** Starts the embeddings gateway; `default` is its one group's token. */
export function embeddingsGateway(
  where: EmbedUpstreams,
  options: StartOptions & { maxBodyBytes?: number } = {},
): Promise<TestGateway> {
  return startGateway(where.url, {
    ...options,
    configYaml: embeddingsConfig(where, options),
    env: { ...EMBED_KEYS, ...options.env },
  });
}

/** Mounts OpenAI's embeddings on the fake at /oai/v1/embeddings; the returned list gets each call's input count. */
export function mountOpenAi(upstream: FakeUpstream, path = "/oai/v1/embeddings"): number[] {
  const calls: number[] = [];
  upstream.routes.set(`POST ${path}`, openAiEmbeddings(EMBED_KEYS.TEST_OPENAI_KEY, calls));
  return calls;
}
