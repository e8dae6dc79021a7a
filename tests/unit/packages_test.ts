/**
 * @module The gateway's packages and the tests' (docs/development.md, "Two configs"): the gateway's deno.json and
 * deno.lock name only what src/ and main.ts import, so a first start downloads nothing else; tests/deno.json has the
 * same packages at the same versions, and more.
 */
import assert from "node:assert/strict";
import { ROOT } from "../_process.ts";

type Lock = {
  specifiers: Record<string, string>;
  npm: Record<string, unknown>;
};

const readJson = async (path: string) => JSON.parse(await Deno.readTextFile(`${ROOT}${path}`));
const gateway = await readJson("deno.json") as {
  imports: Record<string, string>;
  tasks: Record<string, string>;
};
const tests = await readJson("tests/deno.json") as {
  imports: Record<string, string>;
};

/** The bare specifiers a file imports (neither relative nor node:). */
function bareImports(text: string): string[] {
  const found = text.matchAll(
    /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^".][^"]*)"|import\("([^".][^"]*)"\)/g,
  );
  return [...found].map((m) => m[1] ?? m[2]).filter((s) => !s.startsWith("node:"));
}

/** The import map entry a bare specifier resolves through (an exact key, or a key ending in / that prefixes it). */
function entryOf(
  imports: Record<string, string>,
  specifier: string,
): string | undefined {
  if (specifier in imports) return specifier;
  return Object.keys(imports).find((key) => key.endsWith("/") && specifier.startsWith(key));
}

Deno.test("src/ and main.ts import only the packages the gateway's deno.json names", async () => {
  const files = ["main.ts"];
  for await (const entry of Deno.readDir(`${ROOT}src`)) {
    if (entry.isDirectory) await walk(`src/${entry.name}`, files);
  }
  const strays: string[] = [];
  for (const file of files) {
    for (
      const specifier of bareImports(await Deno.readTextFile(`${ROOT}${file}`))
    ) {
      if (!entryOf(gateway.imports, specifier)) {
        strays.push(`${file}: ${specifier}`);
      }
    }
  }
  assert.deepEqual(
    strays,
    [],
    "a test package imported by the gateway would be missing from its first start",
  );
});

async function walk(dir: string, files: string[]): Promise<void> {
  for await (const entry of Deno.readDir(`${ROOT}${dir}`)) {
    if (entry.isDirectory) await walk(`${dir}/${entry.name}`, files);
    else if (entry.name.endsWith(".ts")) files.push(`${dir}/${entry.name}`);
  }
}

Deno.test("tests/deno.json names every package of the gateway's, with the same specifier", () => {
  for (const [name, specifier] of Object.entries(gateway.imports)) {
    assert.equal(tests.imports[name], specifier, name);
  }
  assert.ok(
    Object.keys(tests.imports).length > Object.keys(gateway.imports).length,
  );
});

Deno.test("deno.lock locks only the gateway's packages, at the versions tests/deno.lock has", async () => {
  const own = await readJson("deno.lock") as Lock;
  const theirs = await readJson("tests/deno.lock") as Lock;
  assert.deepEqual(
    Object.keys(own.specifiers).sort(),
    Object.values(gateway.imports).sort(),
  );
  for (const [specifier, version] of Object.entries(own.specifiers)) {
    assert.equal(theirs.specifiers[specifier], version, specifier);
  }
  for (const [pkg, entry] of Object.entries(own.npm)) {
    assert.deepEqual(theirs.npm[pkg], entry, pkg);
  }
});

Deno.test("the gateway's tasks run under its own config; test, check and bench under the tests'", () => {
  for (const [name, command] of Object.entries(gateway.tasks)) {
    const tested = name === "test" || name === "check" ||
      name.startsWith("bench");
    assert.equal(
      command.includes("--config tests/deno.json"),
      tested,
      `${name}: ${command}`,
    );
  }
});

Deno.test("tests/deno.json formats and lints as the gateway's deno.json does", async () => {
  // `deno fmt` given a file under tests/ reads tests/deno.json; CI's `deno fmt --check` reads the gateway's.
  const own = await readJson("deno.json");
  const theirs = await readJson("tests/deno.json");
  assert.deepEqual([theirs.fmt, theirs.lint], [own.fmt, own.lint]);
});
