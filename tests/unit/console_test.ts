/**
 * @module The console's pure parts: HTML that escapes by default, charts, form fields as the admin API's input,
 * the route table's matcher, the Origin check and the session cookie.
 */
import assert from "node:assert/strict";
import { barChart, topSeries } from "../../src/console/chart.ts";
import {
  amount,
  daysBetween,
  duration,
  LIMIT_FIELDS,
  limitsText,
  limitUnit,
  money,
  span,
} from "../../src/console/format.ts";
import { groupInput, tokenCreateInput, tokenUpdateInput } from "../../src/console/forms.ts";
import { html, htmlText } from "../../src/console/html.ts";
import { matchRoute } from "../../src/console/routes.ts";
import { sameOrigin, sessionCookie, sessionIdOf } from "../../src/console/session.ts";
import { safeAddress } from "../../src/console/upstreams.ts";
import { totalsOf } from "../../src/console/usage.ts";
import type { UsageRow } from "../../src/usage/query.ts";

Deno.test("html escapes every value, in text and in attributes, and passes only its own pieces", () => {
  const name = `<img src=x onerror=alert(1)>"'&`;
  const out = htmlText(html`<a title="${name}">${name}</a>${[html`<b>${"<i>"}</b>`, 1, null, undefined, false]}`);
  assert.equal(
    out,
    '<a title="&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;">&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;</a>' +
      "<b>&lt;i&gt;</b>1",
  );
  // A value shaped like a piece of HTML (say, an object read from KV) is still only text.
  const forged = JSON.parse('{"html": "<script>x</script>"}');
  assert.ok(!htmlText(html`${forged}`).includes("<script>"));
});

Deno.test("a chart draws one rect per series and day with a tooltip, escaped names, and an empty state", () => {
  const svg = htmlText(barChart({
    days: ["2026-03-01", "2026-03-02"],
    series: [{ name: "<b>m</b>", values: [3, 0] }, { name: "n", values: [1, 2] }],
    unit: "tokens",
    label: "Tokens per day",
  }));
  assert.equal(svg.match(/<rect /g)?.length, 3);
  assert.ok(svg.includes("<title>2026-03-01 · &lt;b&gt;m&lt;/b&gt;: 3 tokens</title>"));
  assert.ok(svg.includes("<title>2026-03-02: 2 tokens</title>"), "each day's total");
  assert.ok(!svg.includes("<b>m</b>"));
  const empty = htmlText(barChart({ days: ["2026-03-01"], series: [], unit: "requests", label: "Requests" }));
  assert.match(empty, /No requests on these days/);
  assert.doesNotMatch(empty, /<svg/);
});

Deno.test("topSeries() keeps the largest series and sums the rest into other, or follows a given order", () => {
  const series = Array.from({ length: 9 }, (_, i) => ({ name: `s${i}`, values: [i + 1, 1] }));
  const top = topSeries(series, 2);
  assert.deepEqual(top.map((s) => s.name), ["s8", "s7", "s6", "s5", "s4", "s3", "other"]);
  assert.deepEqual(top.at(-1)!.values, [1 + 2 + 3, 3]);
  assert.deepEqual(topSeries(series.slice(0, 3), 2, ["s0", "s2"]).map((s) => s.name), ["s0", "s2", "s1"]);
});

Deno.test("numbers carry their units", () => {
  assert.equal(amount(1, "requests"), "1 request");
  assert.equal(amount(9_999, "tokens"), "9,999 tokens");
  assert.equal(amount(1_234_567, "tokens"), "1.2M tokens");
  assert.equal(duration(340), "340 ms");
  assert.equal(duration(2_500), "2.50 s");
  assert.equal(duration(null), "–");
  assert.equal(span(600_000), "10 min");
  assert.equal(span(90_000), "90 s");
  assert.equal(
    limitsText({ requests_per_minute: 60, tokens_per_day: 2_000_000, cost_per_day: 12.5 }, "EUR"),
    "60 requests/min · 2M tokens/day · 12.5 EUR/day",
  );
  assert.deepEqual(daysBetween("2026-02-27", "2026-03-02", 90), [
    "2026-02-27",
    "2026-02-28",
    "2026-03-01",
    "2026-03-02",
  ]);
  assert.deepEqual(daysBetween("2026-01-01", "2026-03-02", 2), ["2026-03-01", "2026-03-02"]);
});

Deno.test("form fields become the admin API's input, leaving the checks to the service", () => {
  const form = new URLSearchParams({
    group: "default",
    name: "  ",
    expires_at: "2027-01-01T00:00:00.000Z",
    expires_local: "2027-01-01T01:00",
    owner: " Carol@Example.com ",
    requests_per_minute: "60",
    tokens_per_day: "2 000 000",
    tokens_per_month: "lots",
  });
  assert.deepEqual(tokenCreateInput(form), {
    group: "default",
    name: undefined,
    owner: "Carol@Example.com",
    expires_at: "2027-01-01T00:00:00.000Z",
    limits: { requests_per_minute: 60, tokens_per_day: 2_000_000, tokens_per_month: "lots" },
  });
  // Without the page's script the local time is read as UTC; empty limits on an edit clear them.
  assert.deepEqual(tokenUpdateInput(new URLSearchParams({ name: "a", expires_local: "2027-01-01T01:00" })), {
    name: "a",
    group: undefined,
    expires_at: "2027-01-01T01:00:00Z",
    limits: null,
  });
  assert.equal(tokenUpdateInput(new URLSearchParams({ no_expiry: "1", expires_at: "x" })).expires_at, null);
  const group = new URLSearchParams([["name", "g"], ["listing", "auto"], ["models", "a"], ["models", "b"]]);
  assert.deepEqual(groupInput(group, true), { name: "g", listing: "auto", models: ["a", "b"], limits: undefined });
  assert.deepEqual(groupInput(group, false), { listing: "auto", models: ["a", "b"], limits: null });
});

Deno.test("matchRoute() decodes parameters, tells a known path from an unknown one, and refuses bad escapes", () => {
  const handle = () => Promise.resolve(new Response());
  const routes = [
    { method: "GET" as const, path: "/tokens/:id", handle },
    { method: "POST" as const, path: "/tokens/:id/revoke", handle },
  ];
  assert.deepEqual(matchRoute(routes, "GET", "/tokens/tok%5F1").params, { id: "tok_1" });
  assert.equal(matchRoute(routes, "POST", "/tokens/a/revoke").route, routes[1]);
  const wrongMethod = matchRoute(routes, "DELETE", "/tokens/a");
  assert.deepEqual([wrongMethod.route, wrongMethod.pathKnown], [undefined, true]);
  assert.equal(matchRoute(routes, "GET", "/tokens/%E0%A4%A").pathKnown, false);
  assert.equal(matchRoute(routes, "GET", "/tokens/").pathKnown, false);
  assert.equal(matchRoute(routes, "GET", "/tokens/a/b").pathKnown, false);
});

Deno.test("sameOrigin() wants the Origin of the host the request was sent to", () => {
  const request = (headers: Record<string, string>) => new Request("http://gw.internal:8787/ui/tokens", { headers });
  const direct = { authority: "gw.internal:8787" };
  assert.equal(sameOrigin(request({ origin: "http://gw.internal:8787" }), direct), true);
  assert.equal(sameOrigin(request({ origin: "http://gw.internal:9999" }), direct), false);
  assert.equal(sameOrigin(request({ origin: "http://gw.internal:8787.evil" }), direct), false);
  assert.equal(sameOrigin(request({ origin: "null" }), direct), false);
  assert.equal(sameOrigin(request({}), direct), false);
});

Deno.test("the session cookie: read only in its own shape, set strict, Secure over https", () => {
  const id = "a".repeat(43);
  const req = (cookie: string) => new Request("http://h/ui/", { headers: { cookie } });
  assert.equal(sessionIdOf(req(`other=1; modelgate_console=${id}`), false), id);
  assert.equal(sessionIdOf(req("modelgate_console=short"), false), undefined);
  assert.equal(sessionIdOf(req(`modelgate_console=${id}x`), false), undefined);
  // Over https only the __Host- cookie counts: a plain one may have been planted by a sibling domain.
  assert.equal(sessionIdOf(req(`modelgate_console=${id}`), true), undefined);
  assert.equal(sessionIdOf(req(`__Host-modelgate_console=${id}`), true), id);
  assert.equal(sessionIdOf(req(`__Host-modelgate_console=${id}`), false), undefined);
  const expires = new Date("2026-03-04T05:06:07Z");
  const now = new Date(expires.getTime() - 43_200_000);
  assert.equal(
    sessionCookie({ id, expires, now }, true),
    `__Host-modelgate_console=${id}; Max-Age=43200; Expires=Wed, 04 Mar 2026 05:06:07 GMT; Path=/; HttpOnly; SameSite=Strict; Secure`,
  );
  assert.equal(
    sessionCookie({ id, expires, now }, false),
    `modelgate_console=${id}; Max-Age=43200; Expires=Wed, 04 Mar 2026 05:06:07 GMT; Path=/ui; HttpOnly; SameSite=Strict`,
  );
  assert.match(sessionCookie(undefined, false), /^modelgate_console=; Max-Age=0; .*SameSite=Strict$/);
  assert.match(sessionCookie(undefined, true), /^__Host-modelgate_console=; Max-Age=0; .*Path=\/; .*; Secure$/);
});

Deno.test("an upstream's address is shown without anything that could hold a secret", () => {
  assert.equal(safeAddress("https://user:pass@api.example.com/v1?key=abc#x"), "https://api.example.com/v1");
});

Deno.test("totalsOf() adds every figure of per-day rows per key, cost exactly, the most spent first", () => {
  const row = (day: string, key: string, requests: number, cost: string) =>
    ({ key, day, requests, unpriced: 0, total_tokens: requests * 10, cost }) as unknown as UsageRow;
  const totals = totalsOf([row("d1", "a", 1, "0.1"), row("d1", "b", 5, "0.3"), row("d2", "a", 2, "0.2")], false);
  // Equal spend: the most tokens first; then the one that spent more, whatever its tokens.
  assert.deepEqual(totals.map((r) => [r.key, r.requests, r.total_tokens, r.cost]), [
    ["b", 5, 50, "0.3"],
    ["a", 3, 30, "0.3"],
  ]);
  const more = totalsOf([row("d1", "a", 1, "0.4"), row("d1", "b", 5, "0.3")], false);
  assert.deepEqual(more.map((r) => r.key), ["a", "b"]);
});

Deno.test("money is rounded for reading, with its currency", () => {
  assert.equal(money("0", "USD"), "0 USD");
  assert.equal(money("0.000189", "EUR"), "0.00019 EUR");
  assert.equal(money("1234.5", "USD"), "1,234.50 USD");
});

Deno.test("every limit field has its unit, budgets in the config's currency", () => {
  assert.deepEqual(LIMIT_FIELDS.map((field) => limitUnit(field, "USD")), [
    "requests/min",
    "tokens/min",
    "tokens/day",
    "tokens/month",
    "USD/day",
    "USD/month",
    "tool calls/min",
    "MCP requests/min",
  ]);
});
