/**
 * @module A fake Azure OpenAI resource (the v1 API: the Responses API's shape, tests/_fake_responses_api.ts, under
 * `/openai/v1`) and a fake Microsoft Entra ID token endpoint, both on a fake upstream. Like the real ones, the resource
 * takes only its key in the `api-key` header or a bearer token the endpoint issued for Azure OpenAI's scope that has
 * not expired, and the endpoint issues one only for a client-credentials form with the app's id, secret and scope.
 * The Chat Completions refusal of a Responses-only deployment is Azure's 400 `OperationNotSupported`.
 */
import type { FakeUpstream } from "./_fake_upstream.ts";
import { mountResponsesApi, type ResponsesApiState } from "./_fake_responses_api.ts";
import type { Step } from "./_scripted_model.ts";

/** The app registration the endpoint knows. */
export const ENTRA = {
  tenant: "0b8c3e1a-7d2f-4a61-9e35-fake-tenant",
  clientId: "5f1c2d3e-app-client-id",
  clientSecret: "entra-client-secret-Q8~fake.value",
  scope: "https://cognitiveservices.azure.com/.default",
};

/** The resource's key. */
export const AZURE_KEY = "azure-resource-key-0123456789abcdef";

/** A token-endpoint failure, as Entra words one. */
export interface EntraFailure {
  status: number;
  error: string;
  /** Entra's AADSTS number. */
  code: number;
  description: string;
}

/** The fake token endpoint: what it issued and refused. */
export interface FakeEntra {
  /** The forms of the grants it accepted, in order. */
  grants: URLSearchParams[];
  /** Why it refused the grants it refused. */
  refused: string[];
  /** Tokens it issued, with their expiry (epoch ms). */
  issued: Map<string, number>;
  /** A failure to give instead of a token, while set. */
  failure?: EntraFailure;
  /** While set, each token request waits for it before it is answered (an endpoint that hangs). */
  hold?: Promise<unknown>;
  /** Lifetime of the tokens it issues, in seconds. */
  expiresIn: number;
  /** Makes an issued token invalid before its expiry, as a revoked one is. */
  revoke(token: string): void;
}

/** Mounts the token endpoint at `/{tenant}/oauth2/v2.0/token`, reading the clock `now`. */
export function mountEntra(upstream: FakeUpstream, now: () => number): FakeEntra {
  const entra: FakeEntra = {
    grants: [],
    refused: [],
    issued: new Map(),
    expiresIn: 3599,
    revoke: (token) => void entra.issued.delete(token),
  };
  const refuse = (status: number, error: string, code: number, why: string) => {
    entra.refused.push(why);
    return Response.json({
      error,
      error_description: `AADSTS${code}: ${why}. Trace ID: 1f2e Correlation ID: 3c4d Timestamp: 2026-01-01 00:00:00Z`,
      error_codes: [code],
      timestamp: "2026-01-01 00:00:00Z",
      trace_id: "1f2e",
      correlation_id: "3c4d",
    }, { status });
  };
  upstream.routes.set(`POST /${ENTRA.tenant}/oauth2/v2.0/token`, async (seen) => {
    if (entra.hold) await entra.hold;
    if (seen.headers.get("content-type") !== "application/x-www-form-urlencoded") {
      return refuse(400, "invalid_request", 900144, "The request body must contain grant_type");
    }
    const form = new URLSearchParams(seen.raw);
    if (form.get("grant_type") !== "client_credentials") {
      return refuse(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type");
    }
    if (form.get("client_id") !== ENTRA.clientId) {
      return refuse(400, "unauthorized_client", 700016, "Application was not found in the directory");
    }
    if (form.get("client_secret") !== ENTRA.clientSecret) {
      return refuse(401, "invalid_client", 7000215, "Invalid client secret provided");
    }
    if (form.get("scope") !== ENTRA.scope) {
      return refuse(400, "invalid_scope", 1002012, "The provided value for scope is not valid");
    }
    if (entra.failure) {
      const { status, error, code, description } = entra.failure;
      return refuse(status, error, code, description);
    }
    entra.grants.push(form);
    const token = `eyJ0eXAiOiJKV1QifQ.fake-entra-token-${entra.grants.length}.sig`;
    entra.issued.set(token, now() + entra.expiresIn * 1000);
    return Response.json({
      token_type: "Bearer",
      expires_in: entra.expiresIn,
      ext_expires_in: entra.expiresIn,
      access_token: token,
    });
  });
  return entra;
}

/** How one fake Azure resource is reached and what it serves. */
export interface AzureResourceOptions {
  /** Its key; with `entra`, a bearer token from that endpoint is accepted too. */
  apiKey?: string;
  entra?: FakeEntra;
  now?(): number;
  /** Deployments served only through the Responses API. */
  responsesOnly?: string[];
  script?: Step[];
  /** Seals its reasoning items. */
  secret?: string;
}

/** What the resource refused for its credentials, and its deployments' state. */
export interface FakeAzureResource extends ResponsesApiState {
  /** Requests it refused for their credentials. */
  unauthorized: number;
  /** While true, it refuses every credential with a 401 (a role not granted, a token for another resource). */
  refuseAll: boolean;
}

/** Mounts a resource's v1 API under `{prefix}/openai/v1`. */
export function mountAzureResource(
  upstream: FakeUpstream,
  prefix: string,
  options: AzureResourceOptions,
): FakeAzureResource {
  const now = options.now ?? Date.now;
  const resource: FakeAzureResource = Object.assign(
    mountResponsesApi(upstream, `${prefix}/openai/v1`, {
      secret: options.secret ?? "azure-resource",
      authorized,
      azure: true,
      responsesOnly: options.responsesOnly,
      script: options.script,
    }),
    { unauthorized: 0, refuseAll: false },
  );
  function authorized(headers: Headers): boolean {
    const key = headers.get("api-key");
    const bearer = /^Bearer (.+)$/.exec(headers.get("authorization") ?? "")?.[1];
    const ok = !resource.refuseAll && (options.apiKey !== undefined && key === options.apiKey ||
      bearer !== undefined && (options.entra?.issued.get(bearer) ?? 0) > now());
    if (!ok) resource.unauthorized++;
    return ok;
  }
  return resource;
}
