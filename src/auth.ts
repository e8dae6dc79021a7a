/** @module Client credentials: reading them from headers and resolving them to a live token and its group. */
import { GatewayError } from "./errors.ts";
import type { Group, Store, TokenRecord } from "./store.ts";

/** The token secret from `x-api-key` or `Authorization: Bearer`; x-api-key wins when both are sent. */
export function readCredential(headers: Headers): string | undefined {
  const apiKey = headers.get("x-api-key")?.trim();
  if (apiKey) return apiKey;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "");
  return match?.[1];
}

/** Who is calling: the token record and the group that decides its models. */
export interface Principal {
  token: TokenRecord;
  group: Group;
}

/** Resolves a credential to a live token and its group; anything else is a 401. */
export async function authenticate(store: Store, credential: string | undefined, now: Date): Promise<Principal> {
  if (!credential) {
    throw new GatewayError("authentication", "Missing API key: send it as x-api-key or Authorization: Bearer");
  }
  const token = credential.startsWith("sk-") ? await store.findToken(credential) : null;
  if (!token) throw new GatewayError("authentication", "Invalid API key");
  if (token.disabled) throw new GatewayError("authentication", "API key has been revoked");
  if (token.expires_at && Date.parse(token.expires_at) <= now.getTime()) {
    throw new GatewayError("authentication", "API key has expired");
  }
  const group = await store.getGroup(token.group);
  if (!group) throw new GatewayError("permission", `API key's group "${token.group}" no longer exists`);
  return { token, group };
}
