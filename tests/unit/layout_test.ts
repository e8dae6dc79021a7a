/**
 * @module The layout of src/ stays true: every file sits in a folder named after its layer, imports point only
 * down the layers, no import circle anywhere (in src/, bench/ or tests/, inside a folder or across, type-only imports
 * counted), translate/ stays pure, nothing in src/ reaches outside, and comments cite sections that docs/protocols.md
 * has.
 */
import assert from "node:assert/strict";

/**
 * Folders of src/ by layer, lowest first (protocols/ holds the wire facts of each protocol, above the shared vocabulary
 * and below everything that reads or writes a protocol's bodies and events; "." is app.ts alone, the endpoint table every request goes through; serve/
 * is the process around it: the config and KV opened, the port bound, workers, the shutdown). A file may import its
 * own folder and any folder of a lower layer, never one of the same or a higher layer. A new folder gets a layer here
 * and a line in docs/development.md.
 */
const LAYERS: Record<string, number> = {
  core: 0,
  protocols: 1,
  translate: 2,
  usage: 2,
  providers: 2,
  access: 3,
  conversations: 3,
  relay: 3,
  mcp: 3,
  handlers: 4,
  observe: 4,
  batches: 5,
  admin: 6,
  console: 7,
  oauth: 8,
  ".": 9,
  serve: 10,
  cli: 11,
};
const ROOT_FILES = new Set(["app.ts"]);
/** What a pure translator must not touch: the network and Deno's APIs (KV, files, environment). */
const IMPURE = /\bfetch\s*\(|\bDeno\./;

/** A source file of src/: its path relative to src/, its text, and the relative paths it imports. */
interface Source {
  path: string;
  text: string;
  imports: string[];
}

/** The relative specifiers of every static import, re-export and dynamic import in `text`. */
export function parseImports(text: string): string[] {
  const found: string[] = [];
  const pattern =
    /(?:^|[\s;{}])(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(?\s*["']([^"']+)["']/g;
  for (const match of text.matchAll(pattern)) {
    const specifier = match[1] ?? match[2];
    if (specifier.startsWith(".")) found.push(specifier);
  }
  return found;
}

/** Joins `specifier` to the folder of `from` (both relative to src/); a path outside src/ starts with "../". */
function resolve(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const part of specifier.split("/")) {
    if (part === "..") parts.length > 0 && parts.at(-1) !== ".." ? parts.pop() : parts.push("..");
    else if (part !== ".") parts.push(part);
  }
  return parts.join("/");
}

/** The folder of a path relative to src/: its first segment, or "." for a file at the top. */
function folderOf(path: string): string {
  return path.includes("/") ? path.split("/")[0] : ".";
}

/** A folder as a message names it. */
function label(folder: string): string {
  return folder === "." ? "the top of src/" : `${folder}/`;
}

/** Every way `sources` break the layout, as sentences; empty when the layout holds. */
export function layoutProblems(sources: readonly Source[]): string[] {
  const problems: string[] = [];
  const edges = new Map<string, string[]>();
  for (const source of sources) {
    const folder = folderOf(source.path);
    if (!(folder in LAYERS)) problems.push(`${source.path}: folder "${folder}" has no layer in LAYERS`);
    if (folder === "." && !ROOT_FILES.has(source.path)) {
      problems.push(`${source.path}: only ${[...ROOT_FILES].join(", ")} belongs at the top of src/`);
    }
    if (!/^\/\*\*?[\s*]*@module \S/.test(source.text)) problems.push(`${source.path}: no @module line at the top`);
    if (folder === "translate" && IMPURE.test(source.text)) {
      problems.push(`${source.path}: translate/ is pure, but this file uses fetch or Deno`);
    }
    const targets = source.imports.map((specifier) => resolve(source.path, specifier));
    edges.set(source.path, targets);
    for (const target of targets) {
      const to = folderOf(target);
      if (target.startsWith("../")) {
        problems.push(`${source.path} imports ${target}: nothing in src/ imports from outside it`);
      } else if (to !== folder && (LAYERS[to] ?? Infinity) >= (LAYERS[folder] ?? -Infinity)) {
        problems.push(
          `${source.path} imports ${target}: ${label(folder)} may not import ${label(to)} (not a lower layer)`,
        );
      }
    }
  }
  problems.push(...importCircles(sources));
  return problems;
}

/**
 * Every import circle among `sources`, as sentences: a circle inside one folder is refused as one across folders
 * is, since either leaves its files without an order to read (or load) them in, and a type-only import counts.
 */
export function importCircles(sources: readonly Source[]): string[] {
  const edges = new Map(sources.map((s) => [s.path, s.imports.map((specifier) => resolve(s.path, specifier))]));
  return circles(edges).map((circle) => `import circle: ${circle.join(", ")}`);
}

/** The strongly connected groups of more than one file (Tarjan's algorithm), each sorted. */
function circles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!edges.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) out.push(group.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return out;
}

/** Every .ts file under `dir`, with paths relative to it. */
async function readSources(dir: URL, prefix = ""): Promise<Source[]> {
  const out: Source[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) out.push(...await readSources(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`));
    else if (entry.name.endsWith(".ts")) {
      const text = await Deno.readTextFile(new URL(entry.name, dir));
      out.push({ path: `${prefix}${entry.name}`, text, imports: parseImports(text) });
    }
  }
  return out;
}

/** The section names a text cites as `docs/protocols.md, "Name"` (comment line breaks joined first). */
export function citedSections(text: string): string[] {
  const joined = text.replace(/\n\s*(?:\*|\/\/)\s*/g, " ");
  const out: string[] = [];
  for (const match of joined.matchAll(/docs\/protocols\.md[,:]?((?:\s*,?\s*"[^"]+")+)/g)) {
    for (const name of match[1].matchAll(/"([^"]+)"/g)) out.push(name[1]);
  }
  return out;
}

const source = (path: string, ...imports: string[]): Source => ({ path, text: "/** @module A file. */\n", imports });

Deno.test("src/ keeps its layout: folders by layer, imports downward, no import circle", async () => {
  const sources = await readSources(new URL("../../src/", import.meta.url));
  assert.ok(sources.length > 50, "src/ was read");
  assert.deepEqual(layoutProblems(sources), []);
});

Deno.test("bench/ and tests/ have no import circle either", async () => {
  for (const dir of ["bench", "tests"]) {
    const sources = await readSources(new URL(`../../${dir}/`, import.meta.url));
    assert.ok(sources.length > 10, `${dir}/ was read`);
    assert.deepEqual(importCircles(sources), [], dir);
  }
});

Deno.test("comments in src/ and tests/ cite only sections that docs/protocols.md has", async () => {
  const docs = await Deno.readTextFile(new URL("../../docs/protocols.md", import.meta.url));
  const headings = new Set([...docs.matchAll(/^#+ (.+)$/gm)].map((match) => match[1]));
  const files = [
    ...await readSources(new URL("../../src/", import.meta.url)),
    // This file quotes citations as examples.
    ...(await readSources(new URL("../", import.meta.url))).filter((file) => file.path !== "unit/layout_test.ts"),
  ];
  const cited = files.flatMap((file) => citedSections(file.text).map((name) => ({ file: file.path, name })));
  assert.ok(cited.length >= 10, "the translators' citations were found");
  assert.deepEqual(cited.filter(({ name }) => !headings.has(name)), []);
  // The wire facts the code relies on are stated in the repository, not in a file outside it.
  assert.deepEqual(files.filter((file) => /PROTOCOLS\.md/.test(file.text)).map((file) => file.path), []);
});

Deno.test("citedSections() reads citations that a comment wraps over lines", () => {
  const text =
    '/**\n * See docs/protocols.md, "Anthropic\n * streams"; and docs/protocols.md: "Errors", "Token estimates".\n */';
  assert.deepEqual(citedSections(text), ["Anthropic streams", "Errors", "Token estimates"]);
});

Deno.test("parseImports() finds static, type-only, multi-line, re-exported and dynamic imports", () => {
  const text = [
    'import { z } from "zod";',
    'import type { Config } from "../core/config.ts";',
    "import {\n  a,\n  b,\n} from './shared.ts';",
    'export type { Translation } from "./identity.ts";',
    'import "./side_effect.ts";',
    'const lazy = await import("../relay/relay.ts");',
    "// a comment that says import nothing from here",
  ].join("\n");
  assert.deepEqual(parseImports(text), [
    "../core/config.ts",
    "./shared.ts",
    "./identity.ts",
    "./side_effect.ts",
    "../relay/relay.ts",
  ]);
});

Deno.test("layoutProblems() names each broken rule", () => {
  const cases: { name: string; sources: Source[]; problem: RegExp }[] = [
    {
      name: "core imports the project",
      sources: [source("core/config.ts", "../access/limits.ts"), source("access/limits.ts")],
      problem: /core\/config\.ts imports access\/limits\.ts: core\/ may not import access\//,
    },
    {
      name: "the shared vocabulary imports a protocol's facts",
      sources: [source("core/sse.ts", "../protocols/anthropic.ts"), source("protocols/anthropic.ts")],
      problem: /core\/sse\.ts imports protocols\/anthropic\.ts: core\/ may not import protocols\//,
    },
    {
      name: "a protocol's facts import a translator",
      sources: [source("protocols/chat.ts", "../translate/shared.ts"), source("translate/shared.ts")],
      problem: /protocols\/ may not import translate\//,
    },
    {
      name: "a service imports the command line",
      sources: [source("admin/service.ts", "../cli/args.ts"), source("cli/args.ts")],
      problem: /admin\/ may not import cli\//,
    },
    {
      name: "two folders of one layer import each other",
      sources: [source("relay/routing.ts", "../access/store.ts"), source("access/store.ts")],
      problem: /relay\/ may not import access\//,
    },
    {
      name: "src/ imports the entry point",
      sources: [source("app.ts", "../main.ts")],
      problem: /app\.ts imports \.\.\/main\.ts: nothing in src\/ imports from outside it/,
    },
    {
      name: "src/ imports the benchmark",
      sources: [source("relay/relay.ts", "../../bench/setup.ts")],
      problem: /imports \.\.\/bench\/setup\.ts/,
    },
    {
      name: "a translator fetches",
      sources: [{ path: "translate/x.ts", text: "/** @module X. */\nawait fetch(url);\n", imports: [] }],
      problem: /translate\/ is pure/,
    },
    {
      name: "a translator opens KV",
      sources: [{ path: "translate/x.ts", text: "/** @module X. */\nawait Deno.openKv();\n", imports: [] }],
      problem: /translate\/ is pure/,
    },
    { name: "a file without a statement", sources: [{ path: "core/x.ts", text: "", imports: [] }], problem: /@module/ },
    { name: "a second file at the top", sources: [source("limits.ts")], problem: /only app\.ts/ },
    {
      name: "the app imports the process around it",
      sources: [source("app.ts", "./serve/runtime.ts"), source("serve/runtime.ts")],
      problem: /app\.ts imports serve\/runtime\.ts: the top of src\/ may not import serve\//,
    },
    { name: "a folder with no layer", sources: [source("widgets/page.ts")], problem: /"widgets" has no layer/ },
    {
      name: "the admin API imports the console",
      sources: [source("admin/routes.ts", "../console/routes.ts"), source("console/routes.ts")],
      problem: /admin\/ may not import console\//,
    },
  ];
  for (const { name, sources, problem } of cases) {
    const problems = layoutProblems(sources);
    assert.ok(problems.some((p) => problem.test(p)), `${name}: ${JSON.stringify(problems)}`);
  }
});

Deno.test("layoutProblems() reports every import circle: across folders, inside one, and of types alone", () => {
  const across = layoutProblems([
    source("app.ts", "./handlers/generate.ts"),
    source("handlers/generate.ts", "../app.ts"),
  ]);
  assert.ok(across.includes("import circle: app.ts, handlers/generate.ts"), JSON.stringify(across));
  const inside = layoutProblems([
    source("relay/relay.ts", "./attempt.ts"),
    source("relay/attempt.ts", "./answer.ts"),
    source("relay/answer.ts", "./relay.ts"),
  ]);
  assert.deepEqual(inside, ["import circle: relay/answer.ts, relay/attempt.ts, relay/relay.ts"]);
  const types = (path: string, from: string): Source => {
    const text = `/** @module A file. */\nimport type { Shape } from "${from}";\n`;
    return { path, text, imports: parseImports(text) };
  };
  const typesOnly = layoutProblems([types("mcp/sessions.ts", "./keys.ts"), types("mcp/keys.ts", "./sessions.ts")]);
  assert.deepEqual(typesOnly, ["import circle: mcp/keys.ts, mcp/sessions.ts"]);
  assert.deepEqual(layoutProblems([source("relay/relay.ts", "./attempt.ts"), source("relay/attempt.ts")]), []);
});

Deno.test("importCircles() finds a circle in bench/'s files, whose imports of src/ lead out of the set", () => {
  const bench = [
    source("report.ts", "./targets.ts", "../src/core/bytes.ts"),
    source("targets.ts", "./report.ts"),
    source("run.ts", "./report.ts"),
  ];
  assert.deepEqual(importCircles(bench), ["import circle: report.ts, targets.ts"]);
});
