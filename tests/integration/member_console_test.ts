/**
 * @module A member in the console: they land on My tokens, see only their own tokens and usage, create a token in a
 * group they may use (its secret shown once) and revoke it, are refused another's token and every other page, and
 * are shown no link to any page but their own; an operator opening a member's page is sent to the operator's; and the
 * same through a real OpenID provider on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { CONSOLE_ROUTES } from "../../src/console/routes.ts";
import { oidcSignIn, open, post, signIn, signInAs } from "../_console.ts";
import { fakeUpstream, jsonReply } from "../_fake_upstream.ts";
import { anthropicMessage, deadlineFetch, messagesBody, startGateway, type TestGateway } from "../_helpers.ts";
import { startOidcProvider } from "../_oidc_provider.ts";

const fetchWithDeadline = deadlineFetch();
const ALICE = { email: "alice@example.com", role: "member" as const, token_groups: ["default", "auto"] };

/** Every /ui link and form target of a page, without its query. */
function targets(page: string): string[] {
  return [...page.matchAll(/(?:href|action)="(\/ui\/[^"?#]*)/g)].map((m) => m[1]).filter((path) =>
    !path.startsWith("/ui/assets/")
  );
}

/** The /ui paths a member's page may point to: their own pages, the way home and signing out. */
function onlyOwn(page: string, where: string): void {
  for (const target of targets(page)) {
    assert.ok(/^\/ui\/(my\/.*|logout)?$/.test(target), `${where} links to ${target}`);
  }
}

/** A token of Alice's and one of Bob's, each used once. */
async function twoPeople(gw: TestGateway) {
  const mine = await gw.store.createToken({ group: "default", name: "alice-laptop", owner: ALICE.email });
  const theirs = await gw.store.createToken({ group: "default", name: "bob-laptop", owner: "bob@example.com" });
  for (const secret of [mine.secret, theirs.secret, theirs.secret]) {
    const res = await gw.post("/v1/messages", messagesBody(), { "x-api-key": secret });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  }
  await gw.flush();
  return { mine: mine.record.id, theirs: theirs.record.id };
}

Deno.test("a member lands on My tokens and sees only their own tokens and usage, with links to nothing else", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const ids = await twoPeople(gw);
  const cookie = await signInAs(gw, ALICE);
  const landing = await fetchWithDeadline(`${gw.url}/ui/`, { redirect: "manual", headers: { cookie } });
  await landing.body?.cancel();
  assert.equal(landing.status, 303);
  assert.equal(landing.headers.get("location"), "/ui/my/tokens");
  const tokens = await open(gw, "/ui/my/tokens", cookie);
  assert.equal(tokens.status, 200);
  assert.ok(tokens.text.includes(ids.mine) && tokens.text.includes("alice-laptop"));
  assert.ok(!tokens.text.includes(ids.theirs) && !tokens.text.includes("bob-laptop"), "another's token is not shown");
  assert.match(tokens.text, /Signed in as <strong>alice@example\.com<\/strong>/);
  assert.match(tokens.text, />My tokens<\/a>[\s\S]*>My usage<\/a>/);
  onlyOwn(tokens.text, "My tokens");
  const usage = await open(gw, "/ui/my/usage", cookie);
  assert.equal(usage.status, 200);
  assert.ok(usage.text.includes("alice-laptop") && !usage.text.includes("bob-laptop"));
  assert.match(usage.text, /<div class="value">1 request<\/div>/, "only the member's one request is counted");
  onlyOwn(usage.text, "My usage");
  // Every page not a member's answers 403, framed with the member's own links only.
  for (const route of CONSOLE_ROUTES.filter((route) => route.method === "GET" && !route.member)) {
    if (route.path === "/") continue;
    const page = await open(gw, `/ui${route.path.replaceAll(/:[a-z_]+/g, ids.mine)}`, cookie);
    assert.equal(page.status, 403, route.path);
    assert.match(page.text, /may open only their own tokens and usage/);
    onlyOwn(page.text, route.path);
  }
  const missing = await open(gw, "/ui/no-such-page", cookie);
  assert.equal(missing.status, 404);
  onlyOwn(missing.text, "a page that does not exist");
});

Deno.test("a member creates a token in an allowed group, sees its secret once, and revokes it", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using gw = await startGateway(upstream.url, { admin: true });
  const ids = await twoPeople(gw);
  const cookie = await signInAs(gw, ALICE);
  const form = await open(gw, "/ui/my/tokens", cookie);
  const choices = [...form.text.matchAll(/<option[^>]*>([^<]*)<\/option>/g)].map((m) => m[1]);
  assert.deepEqual(choices.sort(), ["auto", "default"], "only the member's token groups are offered");
  const made = await post(gw, "/ui/my/tokens", { group: "auto", name: "new-laptop", owner: "bob@example.com" }, {
    cookie,
  });
  assert.equal(made.status, 201);
  const page = await made.text();
  const secret = page.match(/sk-[A-Za-z0-9_-]+/)![0];
  onlyOwn(page, "the created page");
  const token = (await gw.store.listTokens()).find((t) => t.name === "new-laptop")!;
  assert.equal(token.owner, ALICE.email, "the member's own token, whatever the form said");
  const works = await gw.post("/v1/messages", messagesBody({ model: "claude-test" }), { "x-api-key": secret });
  assert.equal(works.status, 200);
  await works.body?.cancel();
  const listed = await open(gw, "/ui/my/tokens", cookie);
  assert.ok(listed.text.includes(token.id) && !listed.text.includes(secret), "listed, the secret not shown again");

  const refused = await post(gw, "/ui/my/tokens", { group: "oa", name: "sneaky" }, { cookie });
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /may not create tokens in group &quot;oa&quot;/);

  const other = await post(gw, `/ui/my/tokens/${ids.theirs}/revoke`, {}, { cookie });
  assert.equal(other.status, 404);
  await other.body?.cancel();
  assert.equal((await gw.store.getToken(ids.theirs))!.disabled, false, "another's token is untouched");

  const revoked = await post(gw, `/ui/my/tokens/${token.id}/revoke`, {}, { cookie });
  assert.equal(revoked.status, 303);
  assert.equal(revoked.headers.get("location"), "/ui/my/tokens?done=revoked");
  await revoked.body?.cancel();
  assert.equal((await gw.store.getToken(token.id))!.disabled, true);
  const trail = (await (await gw.admin("GET", "/admin/audit")).json()).data;
  assert.deepEqual(trail.map((r: { action: string; actor: string }) => [r.action, r.actor]), [
    ["token.revoke", ALICE.email],
    ["token.create", ALICE.email],
  ]);
});

Deno.test("an operator who opens a member's page is sent to the operator's page, and nothing is done", async () => {
  await using upstream = fakeUpstream();
  await using gw = await startGateway(upstream.url, { admin: true });
  const cookie = await signIn(gw);
  for (const [path, to] of [["/ui/my/tokens", "/ui/tokens"], ["/ui/my/usage", "/ui/usage"]]) {
    const page = await fetchWithDeadline(`${gw.url}${path}`, { redirect: "manual", headers: { cookie } });
    await page.body?.cancel();
    assert.equal(page.status, 303, path);
    assert.equal(page.headers.get("location"), to);
  }
  const before = (await gw.store.listTokens()).length;
  const made = await post(gw, "/ui/my/tokens", { group: "default", name: "x" }, { cookie });
  assert.equal(made.status, 303);
  assert.equal(made.headers.get("location"), "/ui/tokens");
  await made.body?.cancel();
  assert.equal((await gw.store.listTokens()).length, before);
});

Deno.test("a member signed in through a real OpenID provider lands on their tokens, mints one and sees their usage", async () => {
  await using upstream = fakeUpstream();
  upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage()));
  await using provider = await startOidcProvider({ alice: { email: "Alice@Example.com" } });
  await using gw = await startGateway(upstream.url, {
    admin: true,
    env: { OIDC_CLIENT_SECRET: provider.clientSecret },
    extraYaml: `auth:
  oidc:
    issuer: "${provider.issuer}"
    client_id: ${provider.clientId}
    client_secret_env: OIDC_CLIENT_SECRET
    roles:
      - { domain: example.com, role: member, token_groups: [default] }
`,
  });
  const ids = await twoPeople(gw);
  const signedIn = await oidcSignIn(gw, provider, "alice");
  assert.equal(signedIn.status, 303);
  const home = await fetchWithDeadline(`${gw.url}${signedIn.location}`, {
    redirect: "manual",
    headers: { cookie: signedIn.cookie! },
  });
  await home.body?.cancel();
  assert.equal(home.headers.get("location"), "/ui/my/tokens");
  const tokens = await open(gw, "/ui/my/tokens", signedIn.cookie);
  assert.ok(tokens.text.includes(ids.mine) && !tokens.text.includes(ids.theirs));
  const made = await post(gw, "/ui/my/tokens", { group: "default", name: "via-sso" }, { cookie: signedIn.cookie! });
  assert.equal(made.status, 201);
  const secret = (await made.text()).match(/sk-[A-Za-z0-9_-]+/)![0];
  assert.equal((await gw.store.findToken(secret))!.owner, ALICE.email);
  const usage = await open(gw, "/ui/my/usage", signedIn.cookie);
  assert.match(usage.text, /<div class="value">1 request<\/div>/);
  assert.ok(!usage.text.includes("bob-laptop"));
});
