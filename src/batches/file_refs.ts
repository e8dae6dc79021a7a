/**
 * @module The file ids a request names (Anthropic `document` / `image` blocks whose source is of type `file`,
 * Responses `input_file` parts), and the rule that they are the caller's own and live where the request goes.
 */
import { GatewayError } from "../core/errors.ts";
import type { Principal } from "../core/principal.ts";
import { isObject } from "../core/types.ts";
import type { IdStore } from "./ids.ts";
import { accountOf, type Native } from "./upstreams.ts";
import type { UpstreamConfig } from "../core/config.ts";

/** Every file id named in a Messages or Responses body, in order, each once. */
export function fileIdsOf(body: Record<string, unknown>): string[] {
  const ids = new Set<string>();
  const visit = (value: unknown, depth: number): void => {
    if (depth > 8) return;
    if (Array.isArray(value)) return value.forEach((item) => visit(item, depth + 1));
    if (!isObject(value)) return;
    const source = value.source;
    if (isObject(source) && source.type === "file" && typeof source.file_id === "string") ids.add(source.file_id);
    if (value.type === "input_file" && typeof value.file_id === "string") ids.add(value.file_id);
    if (Array.isArray(value.content)) visit(value.content, depth + 1);
  };
  visit(body.messages, 0);
  visit(body.input, 0);
  return [...ids];
}

/**
 * Checks that every file id is the caller's (another token's is the provider's 404) and held by `native`, which the
 * request goes to; `field` names the request in the message.
 */
export async function sameDeployment(
  ids: readonly string[],
  field: string,
  native: Native,
  principal: Principal,
  store: IdStore,
  upstreams: readonly UpstreamConfig[],
): Promise<void> {
  for (const id of ids) {
    const record = await store.owned("file", id, principal.token.id);
    if (!record) {
      throw new GatewayError("not_found", `${field}: no such file ${JSON.stringify(id)}`, { param: field });
    }
    const holder = record.upstream === null
      ? undefined
      : upstreams.find((upstream) => upstream.name === record.upstream);
    if (!holder || accountOf(holder) !== accountOf(native.upstream)) {
      throw new GatewayError(
        "invalid_request",
        `${field}: file ${JSON.stringify(id)} is held by another provider account than this batch's; upload it again`,
        { param: field },
      );
    }
  }
}
