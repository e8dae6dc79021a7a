/**
 * @module The people's own endpoints under /auth, which need no admin key: `POST /auth/logout` revokes the token
 * that calls it, when that token belongs to a person, and records it in the audit trail under that person.
 */
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import type { Endpoint } from "../handlers/context.ts";
import { serviceOf, whereFrom } from "./routes.ts";

/** POST /auth/logout: the caller's own token, found by its bearer, is revoked. Errors use OpenAI's shape. */
const LOGOUT: Endpoint = {
  method: "POST",
  path: "/auth/logout",
  errors: () => "openai-chat",
  async handle(req, ctx) {
    const { token } = await ctx.authenticate();
    if (req.body) await req.body.cancel();
    if (!token.owner) {
      // An operator handed this token out: revoking it is theirs to decide, not whoever holds the secret.
      throw new GatewayError(
        "permission",
        `Token "${token.id}" belongs to no person (it has no owner), so it cannot sign itself out; an operator ` +
          "revokes it",
      );
    }
    const service = serviceOf(ctx.deps, { name: token.owner, role: "admin", ...whereFrom(req, ctx, "api") });
    const revoked = await service.revokeToken(token.id);
    return json({ revoked: revoked.id });
  },
};

/** The /auth endpoints, for the app's endpoint table. */
export const AUTH_ENDPOINTS: readonly Endpoint[] = [LOGOUT];
