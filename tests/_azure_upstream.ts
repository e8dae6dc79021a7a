/**
 * @module A gateway in front of fake Azure OpenAI resources (tests/_fake_azure.ts) on one clock the test moves:
 * `az-key` serves `codex` (deployment `my-codex`) through the Responses API with the resource's key; `az-chat` serves
 * `gpt-chat` (`my-gpt`) and `codex-chat` (`my-codex`, Responses-only there) through Chat Completions with the key;
 * `az-entra` serves `codex-entra` (`my-codex`) through the Responses API with a Microsoft Entra ID token from the fake
 * token endpoint.
 */
import { type FakeUpstream, fakeUpstream } from "./_fake_upstream.ts";
import { type Json } from "./_fake_responses_api.ts";
import {
  AZURE_KEY,
  ENTRA,
  type FakeAzureResource,
  type FakeEntra,
  mountAzureResource,
  mountEntra,
} from "./_fake_azure.ts";
import { READ_FILE } from "./_responses_upstream.ts";
import { startGateway, type StartOptions, type TestGateway } from "./_helpers.ts";

/** The variables the gateway reads its Azure credentials from. */
const AZURE_ENV = { AZURE_OPENAI_API_KEY: AZURE_KEY, AZURE_CLIENT_SECRET: ENTRA.clientSecret };

/** What a rig may change of the gateway's config. */
export interface AzureConfigOptions {
  /** Where the Entra upstream signs in (the fake endpoint by default). */
  authority?: string;
  /** Each upstream's `timeout_ms` (5 s by default). */
  timeoutMs?: number;
  /** The `routing` section (no retries, no affinity by default). */
  routing?: string;
}

/** The gateway's config in front of the fakes at `url`. */
function azureConfig(url: string, options: AzureConfigOptions): string {
  const { authority = url, timeoutMs = 5000 } = options;
  const routing = options.routing ??
    "{ deadline_ms: 5000, affinity: { enabled: false }, retry_budget: { ratio: 0, min_retries: 0 } }";
  const common = `timeout_ms: ${timeoutMs}`;
  const entra = `{ tenant_id: "${ENTRA.tenant}", client_id: "${ENTRA.clientId}", ` +
    `client_secret_env: AZURE_CLIENT_SECRET, authority: "${authority}" }`;
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ":memory:"
routing: ${routing}
upstreams:
  - { name: az-key, protocol: azure-openai, base_url: "${url}/az-key/openai/v1/", api_key_env: AZURE_OPENAI_API_KEY,
      ${common}, models: [{ id: codex, upstream_id: my-codex }] }
  - { name: az-chat, protocol: azure-openai, api: chat, base_url: "${url}/az-chat/openai/v1",
      api_key_env: AZURE_OPENAI_API_KEY, ${common},
      models: [{ id: gpt-chat, upstream_id: my-gpt }, { id: codex-chat, upstream_id: my-codex }] }
  - { name: az-entra, protocol: azure-openai, base_url: "${url}/az-entra/openai/v1", entra: ${entra}, ${common},
      models: [{ id: codex-entra, upstream_id: my-codex }] }
groups:
  - { name: oa, listing: openai, models: [codex, gpt-chat, codex-chat, codex-entra] }
usage: { flush_ms: 60000, auth_refresh_ms: 100 }
`;
}

/** The fakes, the gateway and the clock. */
export interface AzureRig extends AsyncDisposable {
  upstream: FakeUpstream;
  gw: TestGateway;
  token: string;
  clock: { now: number };
  entra: FakeEntra;
  /** Each resource's state, by upstream name. */
  resources: Record<"az-key" | "az-chat" | "az-entra", FakeAzureResource>;
  /** POSTs JSON to the gateway with the token. */
  post(path: string, body: Json, headers?: Record<string, string>): Promise<Response>;
}

/** Starts the fakes and a gateway in front of them. */
export async function azureRig(options: AzureConfigOptions & { gateway?: StartOptions } = {}): Promise<AzureRig> {
  const clock = { now: Date.UTC(2026, 0, 1) };
  const now = () => clock.now;
  const upstream = fakeUpstream();
  const entra = mountEntra(upstream, now);
  const script = READ_FILE;
  const resources = {
    "az-key": mountAzureResource(upstream, "/az-key", { apiKey: AZURE_KEY, now, script }),
    "az-chat": mountAzureResource(upstream, "/az-chat", {
      apiKey: AZURE_KEY,
      now,
      script,
      responsesOnly: ["my-codex"],
    }),
    "az-entra": mountAzureResource(upstream, "/az-entra", { entra, now, script }),
  };
  const gw = await startGateway(upstream.url, {
    configYaml: azureConfig(upstream.url, options),
    env: AZURE_ENV,
    now: () => new Date(clock.now),
    ...options.gateway,
  });
  const token = gw.tokens.oa;
  return {
    upstream,
    gw,
    token,
    clock,
    entra,
    resources,
    post: (path, body, headers = {}) => gw.post(path, body, { "x-api-key": token, ...headers }),
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await upstream[Symbol.asyncDispose]();
    },
  };
}

/** Every secret of the set-up: none may reach a client or a log line. */
export function azureSecrets(rig: AzureRig): string[] {
  return [AZURE_KEY, ENTRA.clientSecret, ...rig.entra.issued.keys(), rig.token];
}
