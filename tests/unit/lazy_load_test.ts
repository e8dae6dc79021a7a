/**
 * @module What `serve` loads only when it is used: the console's pages, the tracing code with the OpenTelemetry
 * API and the JWT library of single sign-on are reached from main.ts by dynamic imports only, so a gateway that
 * never serves /ui, runs without OTEL_DENO or verifies no id_token does not hold their code in memory.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The specifiers of the static imports and re-exports in `text` (not `import(...)`, not `import type`). */
function staticImports(text: string): string[] {
  const pattern = /^\s*(?:import|export)\s+(?!type\b)(?:[^;"'`]*?\bfrom\s*)?["']([^"']+)["']/gm;
  return [...text.matchAll(pattern)].map((match) => match[1]);
}

/** Every module main.ts reaches through static imports: paths relative to the repository, and bare specifiers. */
async function staticallyReached(): Promise<Set<string>> {
  const seen = new Set<string>();
  const queue = [new URL("main.ts", ROOT)];
  while (queue.length > 0) {
    const url = queue.pop()!;
    const path = url.pathname.slice(ROOT.pathname.length);
    if (seen.has(path)) continue;
    seen.add(path);
    for (const specifier of staticImports(await Deno.readTextFile(url))) {
      if (specifier.startsWith(".")) queue.push(new URL(specifier, url));
      else seen.add(specifier);
    }
  }
  return seen;
}

Deno.test("main.ts reaches the console's pages, the tracing code, OpenTelemetry and jose only dynamically", async () => {
  const reached = await staticallyReached();
  assert.ok(reached.has("src/serve/server.ts") && reached.has("src/app.ts"), "the walk follows the imports");
  for (const lazy of ["src/console/routes.ts", "src/observe/tracing.ts", "@opentelemetry/api", "jose"]) {
    assert.equal(reached.has(lazy), false, `${lazy} is loaded at start`);
  }
});

Deno.test("the lazy modules are still imported where they are used", async () => {
  const endpoint = await Deno.readTextFile(new URL("src/console/endpoint.ts", ROOT));
  assert.match(endpoint, /import\("\.\/routes\.ts"\)/);
  const tracing = await Deno.readTextFile(new URL("src/observe/tracing_switch.ts", ROOT));
  assert.match(tracing, /import\("@opentelemetry\/api"\)/);
  assert.match(tracing, /import\("\.\/tracing\.ts"\)/);
  const oidc = await Deno.readTextFile(new URL("src/access/oidc.ts", ROOT));
  assert.match(oidc, /import\("jose"\)/);
});
