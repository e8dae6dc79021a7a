/**
 * @module The consent page of an MCP client's authorization request, once the person has signed in: it names the
 * client as it registered (escaped, as every value of a page is), who the person is, the group they act in and what
 * that group may use on /mcp; `POST /oauth/consent` takes their decision once, on any instance, and sends the browser
 * back to the client with a code (single-use, a minute) or `access_denied`.
 */
import { NoStanding, type Standing, standingOf } from "../access/oauth_access.ts";
import { CODE_MS, issueCode, newGrantId, type OAuthSubject } from "../access/oauth_grants.ts";
import { type Pending, readPending, takePending } from "../access/oauth_pending.ts";
import { type Html, html } from "../console/html.ts";
import type { McpGrant } from "../core/mcp_config.ts";
import type { RequestContext } from "../handlers/context.ts";
import { oauthPage, stopPage } from "./pages.ts";
import { browserSecret, ownForm, redirectBack } from "./reply.ts";

/** What one server's grant allows, in words. */
function allowed(grant: McpGrant[string]): string {
  const list = (value: "*" | string[] | undefined, kind: string) =>
    value === undefined ? undefined : value === "*" ? `every ${kind}` : `${kind}s ${value.join(", ")}`;
  if (grant === "*") return "everything it offers";
  if (Array.isArray(grant)) return list(grant, "tool")!;
  const parts = [list(grant.tools, "tool"), list(grant.prompts, "prompt"), list(grant.resources, "resource")];
  return parts.filter(Boolean).join("; ") || "nothing";
}

/** The person or token the grant is for, as the page names them. */
function whoOf(subject: OAuthSubject, standing: Standing | undefined): string {
  if (subject.kind === "person") return subject.email;
  return standing?.token ? `the token "${standing.token.name}" (${subject.token_id})` : subject.token_id;
}

/** The consent page for `pending`, whose subject is signed in; `why` when they may not grant anything. */
function consentPage(id: string, pending: Pending, standing: Standing | undefined, why?: string): Response {
  const subject = pending.subject!;
  const servers = Object.entries(standing?.group.mcp ?? {});
  const grants: Html = servers.length
    ? html`<ul class="grants">${
      servers.map(([server, grant]) => html`<li><code>${server}</code>: ${allowed(grant)}</li>`)
    }</ul>`
    : html`<p class="muted">The group has no MCP server.</p>`;
  const back = new URL(pending.redirect_uri);
  const place = back.protocol === "http:" || back.protocol === "https:" ? back.host : `${back.protocol}//${back.host}`;
  const what = standing
    ? html`<p>It will act as <strong>${
      whoOf(subject, standing)
    }</strong> in the group <code>${standing.group.name}</code>,
        which may use:</p>${grants}
        <p class="muted">What the group may use is checked at every call, and the access ends when your role or token
        does, or when you or an operator revoke it.</p>`
    : html`<p>It cannot be given access: ${why}.</p>`;
  const body = html`
    <div class="panel consent">
      <p><strong class="client">${pending.client_name}</strong> asks to use this gateway's MCP tools at
        <code>${pending.resource}</code>.</p>
      ${what}
      <p class="muted">You will be sent back to ${place}. Client id: <code>${pending.client_id}</code></p>
      <form method="post" action="/oauth/consent">
        <input type="hidden" name="request" value="${id}">
        ${standing ? html`<button type="submit" name="decision" value="allow" class="primary">Allow</button>` : ""}
        <button type="submit" name="decision" value="deny">${standing ? "Deny" : "Back to the app"}</button>
      </form>
    </div>
  `;
  return oauthPage({ title: `Allow ${pending.client_name}?`, body }, 200, { redirectTo: pending.redirect_uri });
}

/** The standing of the request's subject, or why it has none. */
async function judge(ctx: RequestContext, subject: OAuthSubject): Promise<Standing | string> {
  const { deps } = ctx;
  const rules = deps.config.auth.oidc?.roles ?? [];
  try {
    return await standingOf(
      { store: deps.store, credentials: deps.operator.credentials, rules, now: deps.now },
      subject,
    );
  } catch (err) {
    if (err instanceof NoStanding) return err.message;
    throw err;
  }
}

/** The request the page or form names, when this browser started it and someone signed in for it. */
async function signedInRequest(req: Request, ctx: RequestContext, id: string | null) {
  const { deps, peer } = ctx;
  const entry = await readPending(deps.store, id, browserSecret(req, peer.https), deps.now().getTime());
  return entry?.value.subject ? entry : undefined;
}

const UNKNOWN = "This sign-in is unknown, was started in another browser, was decided already or took too long.";

/** `GET /oauth/consent?request=...`. */
export async function showConsent(req: Request, ctx: RequestContext): Promise<Response> {
  const id = new URL(req.url).searchParams.get("request");
  const entry = await signedInRequest(req, ctx, id);
  if (!entry || !id) return stopPage(400, UNKNOWN);
  const standing = await judge(ctx, entry.value.subject!);
  return typeof standing === "string"
    ? consentPage(id, entry.value, undefined, standing)
    : consentPage(id, entry.value, standing);
}

/** `POST /oauth/consent`: the person's decision, taken once. */
export async function decideConsent(req: Request, ctx: RequestContext, base: string): Promise<Response> {
  const { deps, peer } = ctx;
  const form = await ownForm(req, ctx);
  const id = form.get("request");
  const entry = await signedInRequest(req, ctx, id);
  if (!entry || !id || !await takePending(deps.store, id, entry)) return stopPage(400, UNKNOWN);
  const pending = entry.value;
  const subject = pending.subject!;
  const standing = form.get("decision") === "allow" ? await judge(ctx, subject) : "the person denied it";
  const state = pending.state;
  const who = subject.kind === "person" ? subject.email : subject.token_id;
  const audit = { who, ip: peer.address, user_agent: req.headers.get("user-agent") ?? undefined };
  if (typeof standing === "string") {
    deps.oauth.count("consent", "denied");
    await deps.oauth.audit({
      ...audit,
      action: "oauth.refused",
      target: pending.client_id,
      after: { step: "consent", reason: standing, client_name: pending.client_name },
    });
    const description = `The request was not allowed: ${standing}`;
    return redirectBack(pending.redirect_uri, {
      error: "access_denied",
      error_description: description,
      state,
      iss: base,
    });
  }
  const now = deps.now();
  const grant = {
    id: newGrantId(),
    client_id: pending.client_id,
    client_name: pending.client_name,
    subject,
    resource: pending.resource,
    created_at: now.toISOString(),
    refreshed_at: null,
    expires_at: now.toISOString(),
    generation: 0,
  };
  const code = await issueCode(deps.store, {
    grant,
    redirect_uri: pending.redirect_uri,
    code_challenge: pending.code_challenge,
    expires_at: now.getTime() + CODE_MS,
  });
  deps.oauth.count("consent", "ok");
  return redirectBack(pending.redirect_uri, { code, state, iss: base });
}
