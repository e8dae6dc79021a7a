/**
 * @module Console sessions on `serve --workers 2`: a sign-in answered by one worker opens pages on both, and signing
 * out on one ends the session on both, since sessions live in KV and not in a worker's memory.
 */
import assert from "node:assert/strict";
import { ADMIN_KEY } from "../_helpers.ts";
import { processConfigYaml } from "../_process.ts";
import { freshFetch, logLines, startWorkers, workersIn } from "../_workers.ts";

/** Opens /ui/tokens `count` times, each on its own connection; answers which of them showed the page. */
async function tokensPages(url: string, cookie: string, count: number): Promise<boolean[]> {
  return await Promise.all(Array.from({ length: count }, async () => {
    const page = await freshFetch(`${url}/ui/tokens`, { headers: { cookie } });
    return page.status === 200 && /<h1>Tokens<\/h1>/.test(page.text);
  }));
}

/** Sends a console form as the console's own page would. */
function form(url: string, path: string, fields: Record<string, string>, cookie?: string) {
  return freshFetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: url, ...cookie ? { cookie } : {} },
    body: new URLSearchParams(fields),
  });
}

Deno.test("2 workers: a console session opened on one worker serves pages on both, and signing out ends it on both", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-workers-console-" });
  try {
    const env = { TEST_UP_KEY: "upstream-key-for-workers", MODELGATE_ADMIN_KEY: ADMIN_KEY };
    const { gateway } = await startWorkers(dir, processConfigYaml(`${dir}/shared.kv`), env);
    await using _ = gateway;
    const signedIn = await form(gateway.url, "/ui/login", { key: ADMIN_KEY });
    assert.equal(signedIn.status, 303);
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0];
    assert.deepEqual(
      await tokensPages(gateway.url, cookie, 16),
      Array(16).fill(true),
      "every worker knows the session",
    );
    const out = await form(gateway.url, "/ui/logout", {}, cookie);
    assert.equal(out.status, 303);
    assert.deepEqual(await tokensPages(gateway.url, cookie, 16), Array(16).fill(false), "no worker keeps it");
    assert.equal(await gateway.stop(), 0);
    const pages = logLines(gateway).filter((line) =>
      line.event === "request" && line.method === "GET" && String(line.route).startsWith("/ui")
    );
    assert.equal(pages.length, 32);
    assert.deepEqual(workersIn(pages.slice(0, 16) as { worker: number }[]), [1, 2], "both served the session");
    assert.deepEqual(workersIn(pages.slice(16) as { worker: number }[]), [1, 2], "both refused it after sign-out");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
