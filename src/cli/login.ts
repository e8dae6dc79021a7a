/**
 * @module `modelgate login` and `modelgate logout`: a person signs in through the gateway's device authorization
 * grant (they confirm a code in a browser while the CLI waits) and keeps the personal token it gives; logout revokes
 * that token and forgets it.
 */
import { isLoopback } from "../core/addresses.ts";
import type { Args, Io } from "./args.ts";
import {
  type Credentials,
  credentialsPath,
  deleteCredentials,
  readCredentials,
  writeCredentials,
} from "./credentials.ts";
import { printable } from "./print.ts";
import { thisProgram } from "./program.ts";

/** How long one call to the gateway may take. */
const CALL_TIMEOUT_MS = 30_000;
/** RFC 8628 section 3.5: a client told to slow down adds 5 seconds to its interval. */
const SLOW_DOWN_S = 5;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** A gateway's root from what a person typed: http(s) only, no trailing slash, no /v1 (the CLI adds the paths). */
export function gatewayRoot(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`--gateway must be the gateway's URL, such as https://gateway.example.com, not "${text}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`--gateway must be an http or https URL, not "${text}"`);
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "").replace(/\/v1$/, "");
}

/**
 * A warning for a gateway reached over plain http beyond this machine, where the token would cross the network
 * readable by anyone on the way; undefined for https or loopback.
 */
export function plainHttpWarning(root: string): string | undefined {
  const url = new URL(root);
  if (url.protocol !== "http:" || isLoopback(url.hostname.replace(/^\[|\]$/g, ""))) return undefined;
  return `Warning: ${root} is plain http, so the token will cross the network unencrypted; use the gateway's https URL`;
}

/** POSTs JSON to the gateway; an unreachable gateway is an error saying so, without the request's body. */
async function post(url: string, body: unknown, signal?: AbortSignal, token?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const timeout = AbortSignal.timeout(CALL_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new Error(`Cannot reach the gateway at ${url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const object = parsed && typeof parsed === "object" ? parsed as Record<string, unknown> : {};
  return { status: res.status, body: object, headers: res.headers };
}

/** What an error answer says: OAuth's `error_description` or `error`, or the message of OpenAI's envelope. */
function reason(answer: Answer): string {
  const { body } = answer;
  const error = body.error;
  if (typeof body.error_description === "string") return body.error_description;
  if (error && typeof error === "object" && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message;
  }
  return typeof error === "string" ? error : `the gateway answered ${answer.status}`;
}

/** {@linkcode reason}, as the terminal may show it: the gateway's words are not the CLI's to trust. */
function shownReason(answer: Answer): string {
  return printable(reason(answer));
}

/** Waits `ms`, or until `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Runs `modelgate login --gateway URL [--group G] [--name N]`. */
export async function loginCommand(args: Args, io: Io, help: string): Promise<number> {
  const path = credentialsPath(io.env);
  const previous = await readCredentials(path).catch(() => undefined);
  const given = typeof args.flags.gateway === "string" ? args.flags.gateway : previous?.gateway;
  if (!given) {
    io.err(`modelgate login needs --gateway URL\n\n${help}`);
    return 2;
  }
  const gateway = gatewayRoot(given);
  const program = thisProgram(io.env);
  const warning = plainHttpWarning(gateway);
  if (warning) io.err(warning);
  // Ctrl-C while waiting ends the wait cleanly: nothing is saved and the grant is left to expire.
  const interrupted = new AbortController();
  const stop = () => interrupted.abort();
  Deno.addSignalListener("SIGINT", stop);
  try {
    const credentials = await signIn(gateway, args, io, { signal: interrupted.signal, program });
    if (!credentials) return interrupted.signal.aborted ? 130 : 1;
    await writeCredentials(path, credentials);
    const expiry = credentials.expires_at ? `, until ${credentials.expires_at}` : "";
    io.err(
      printable(
        `Signed in to ${gateway} as ${credentials.owner}: token ${credentials.token_id} in group ` +
          `"${credentials.group}"${expiry}, kept in ${path}.`,
      ) + `\nNow run a tool with it: ${program} run -- claude`,
    );
    if (previous && previous.token !== credentials.token) await retire(previous, io);
    return 0;
  } catch (err) {
    if (interrupted.signal.aborted) {
      io.err("Sign-in cancelled; nothing was saved.");
      return 130;
    }
    throw err;
  } finally {
    Deno.removeSignalListener("SIGINT", stop);
  }
}

/**
 * Asks the gateway for a grant, shows the person where to confirm it and polls until they have; undefined if not.
 * `program` is how the person started this CLI, for what to run again.
 */
async function signIn(
  gateway: string,
  args: Args,
  io: Io,
  { signal, program }: { signal: AbortSignal; program: string },
): Promise<Credentials | undefined> {
  const started = await post(`${gateway}/auth/device`, {}, signal);
  if (started.status !== 200) {
    io.err(`Cannot sign in to ${printable(gateway)}: ${shownReason(started)}`);
    return undefined;
  }
  const grant = started.body as {
    device_code: string;
    user_code: string;
    verification_uri: string;
    verification_uri_complete?: string;
    interval?: number;
    expires_in: number;
  };
  io.err(`To sign in, open this page in a browser and confirm the code ${printable(String(grant.user_code))}:`);
  io.err(printable(String(grant.verification_uri_complete ?? grant.verification_uri)));
  io.err("Waiting for you to confirm (Ctrl-C to stop)...");
  let intervalS = Math.max(1, Number(grant.interval) || 5);
  const now = io.now ?? Date.now;
  const deadline = now() + grant.expires_in * 1000;
  const request = {
    device_code: grant.device_code,
    ...(typeof args.flags.group === "string" ? { group: args.flags.group } : {}),
    ...(typeof args.flags.name === "string" ? { name: args.flags.name } : {}),
  };
  while (now() < deadline) {
    await (io.sleep ?? pause)(intervalS * 1000, signal);
    if (signal.aborted) {
      io.err("Sign-in cancelled; nothing was saved.");
      return undefined;
    }
    const answer = await post(`${gateway}/auth/device/token`, request, signal);
    if (answer.status === 200) {
      const body = answer.body as Omit<Credentials, "gateway">;
      return {
        gateway,
        token: body.token,
        token_id: body.token_id,
        owner: body.owner,
        group: body.group,
        expires_at: body.expires_at ?? null,
      };
    }
    const error = answer.body.error;
    if (error === "authorization_pending") continue;
    if (error === "slow_down") {
      const wait = Number(answer.headers.get("retry-after"));
      intervalS = Math.max(intervalS + SLOW_DOWN_S, Number.isFinite(wait) ? wait : 0);
      continue;
    }
    const why = error === "access_denied"
      ? `access denied: ${shownReason(answer)}`
      : error === "expired_token"
      ? `the code expired before it was confirmed; run ${program} login again`
      : shownReason(answer);
    io.err(`Cannot sign in to ${printable(gateway)}: ${why}`);
    return undefined;
  }
  io.err(`The code expired before it was confirmed; run ${program} login again.`);
  return undefined;
}

/** Revokes the token a new login replaces, so signing in again leaves no forgotten token working. */
async function retire(previous: Credentials, io: Io): Promise<void> {
  const answer = await post(`${previous.gateway}/auth/logout`, {}, undefined, previous.token).catch(() => undefined);
  if (answer?.status === 200) io.err(`The earlier login's token ${printable(previous.token_id)} is revoked.`);
}

/** Runs `modelgate logout`: revokes the saved token at its gateway, then forgets it. */
export async function logoutCommand(_args: Args, io: Io): Promise<number> {
  const path = credentialsPath(io.env);
  const credentials = await readCredentials(path);
  if (!credentials) {
    io.err(`Not signed in (no ${path}); nothing to do.`);
    return 0;
  }
  const kept = `The token ${credentials.token_id} still works and stays in ${path}; try again, or ask an operator to ` +
    `revoke it.`;
  let answer: Answer;
  try {
    answer = await post(`${credentials.gateway}/auth/logout`, {}, undefined, credentials.token);
  } catch (err) {
    io.err(printable(`${err instanceof Error ? err.message : String(err)}. ${kept}`));
    return 1;
  }
  // A token the gateway no longer takes (revoked, expired) is as good as revoked: only the file is left to forget.
  if (answer.status !== 200 && answer.status !== 401) {
    io.err(`Cannot sign out of ${printable(credentials.gateway)}: ${shownReason(answer)}. ${printable(kept)}`);
    return 1;
  }
  await deleteCredentials(path);
  const what = answer.status === 200 ? "revoked" : "no longer valid";
  io.err(printable(`Signed out of ${credentials.gateway}: token ${credentials.token_id} ${what}, ${path} deleted.`));
  return 0;
}
