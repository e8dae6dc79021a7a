/**
 * @module A request naming file ids (a Messages `document` / `image` of source type `file`, a Responses
 * `input_file`) goes to the deployment holding them: they must be the caller's own, and on one deployment that
 * serves the model.
 */
import { GatewayError } from "../core/errors.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject } from "../core/types.ts";
import type { RequestContext } from "../handlers/context.ts";
import type { ModelRoute } from "../relay/routing.ts";
import { fileIdsOf } from "./file_refs.ts";
import { noSuchFile } from "./files.ts";
import { idStore } from "./ids.ts";
import { accountOf } from "./upstreams.ts";

/** The model's routes narrowed to the deployment holding the files the body names; all of them when it names none. */
export async function holdingRoutes(
  ctx: RequestContext,
  principal: Principal,
  body: JsonObject,
  routes: readonly ModelRoute[],
): Promise<readonly ModelRoute[]> {
  const ids = fileIdsOf(body);
  if (ids.length === 0) return routes;
  const store = idStore(ctx.deps.store.kv);
  const holders = new Set<string>();
  for (const id of ids) {
    const record = await store.owned("file", id, principal.token.id);
    // Another token's file is as unknown as one never uploaded.
    if (!record?.upstream) throw noSuchFile(id);
    holders.add(record.upstream);
  }
  if (holders.size > 1) {
    throw new GatewayError("invalid_request", "The files this request names are held by different deployments", {
      param: "file_id",
    });
  }
  const [name] = holders;
  const holder = ctx.deps.config.upstreams.find((upstream) => upstream.name === name);
  const account = holder && accountOf(holder);
  const held = routes.filter((route) => accountOf(route.upstream) === account);
  if (held.length === 0) {
    throw new GatewayError(
      "invalid_request",
      `model: ${JSON.stringify(body.model)} is not served where the file ${JSON.stringify(ids[0])} is held`,
      { param: "model" },
    );
  }
  return held;
}
