/**
 * @module A real `serve --workers 2` gateway on a KV file for process tests, requests each on a connection of its
 * own (so the kernel may hand it to either worker), and which worker answered, read from the request log.
 */
import { cliToken, denoMain, type GatewayProcess, processConfigYaml, startProcess } from "./_process.ts";
import { readText } from "./_reads.ts";

/** The number of workers these tests run. */
export const WORKERS = 2;

/** Starts `main.ts serve --workers 2` with the config `yaml`, written into `dir` (which it may write). */
export async function startWorkers(
  dir: string,
  yaml: string,
  env: Record<string, string>,
): Promise<{ gateway: GatewayProcess; configFile: string }> {
  const configFile = `${dir}/gateway.yaml`;
  await Deno.writeTextFile(configFile, yaml);
  const gateway = await startProcess({
    command: denoMain(dir, "serve", "--config", configFile, "--workers", String(WORKERS)),
    env,
  });
  return { gateway, configFile };
}

/** The environment of these gateways and of the CLI beside them. */
export const WORKERS_ENV = { TEST_UP_KEY: "upstream-key-for-workers" };

/**
 * Starts a 2-worker gateway whose model m1 is served by the fake upstream at `upstreamUrl` (under /up/v1), on a KV
 * file in `dir`, with `extraYaml` appended to its config, and creates a token of the default group with `tokenFlags`.
 */
export async function workersWithToken(
  dir: string,
  upstreamUrl: string,
  options: { extraYaml?: string; tokenFlags?: string[] } = {},
): Promise<{ gateway: GatewayProcess; configFile: string; token: string; tokenId: string }> {
  const yaml = processConfigYaml(`${dir}/shared.kv`).replace("http://127.0.0.1:9/v1", `${upstreamUrl}/up/v1`) +
    (options.extraYaml ?? "");
  const { gateway, configFile } = await startWorkers(dir, yaml, WORKERS_ENV);
  try {
    const { token, tokenId } = await cliToken(dir, configFile, WORKERS_ENV, "default", options.tokenFlags);
    return { gateway, configFile, token, tokenId };
  } catch (err) {
    await gateway.stop();
    throw err;
  }
}

/**
 * Sends one request on a connection of its own, closed once the answer is read: a client cannot choose a worker, and
 * a connection once accepted stays with its worker, so separate connections are what reaches both.
 */
export async function freshFetch(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  using client = Deno.createHttpClient({});
  const res = await fetch(url, { ...init, client, redirect: "manual", signal: AbortSignal.timeout(15_000) });
  return { status: res.status, text: await readText(res), headers: res.headers };
}

/** The gateway's JSON log lines. */
export function logLines(gateway: GatewayProcess): Record<string, unknown>[] {
  return gateway.stdout.map((line) => JSON.parse(line));
}

/** The request lines of `route`, as the worker that answered and the status it gave. */
export function answeredBy(gateway: GatewayProcess, route: string): { worker: number; status: number }[] {
  return logLines(gateway)
    .filter((line) => line.event === "request" && line.route === route)
    .map((line) => ({ worker: line.worker as number, status: line.status as number }));
}

/** The workers among `lines`, sorted. */
export function workersIn(lines: readonly { worker: number }[]): number[] {
  return [...new Set(lines.map((line) => line.worker))].sort();
}
