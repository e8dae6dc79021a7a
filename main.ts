/** @module The modelgate command line: `deno task start` runs `serve`, `deno task cli ...` the rest. */
import { parseArgs } from "./src/cli/args.ts";
import { runCli } from "./src/cli/commands.ts";
import { defaultArgs, dropRunPermission, dropWritePermission, type ProcessNeeds } from "./src/serve/runtime.ts";

const encoder = new TextEncoder();

/** How long a stopped gateway lets the runtime finish on its own before it ends the process itself. */
const HELD_EXIT_MS = 1000;

/** Ends a stopped gateway that something still holds, and says so. */
function exitHeld(err: (text: string) => void): void {
  err(`modelgate: something still held the process ${HELD_EXIT_MS} ms after it stopped; ending it`);
  Deno.exit();
}

/**
 * Writes a line straight to stdout. What the CLI prints (a new token's secret among it) is for the person who ran it,
 * and with OTEL_DENO on, everything printed through `console` is also exported as a log record.
 */
function printOut(text: string): void {
  const bytes = encoder.encode(`${text}\n`);
  for (let done = 0; done < bytes.length;) done += Deno.stdout.writeSync(bytes.subarray(done));
}

if (import.meta.main) {
  const io = {
    out: printOut,
    err: (text: string) => console.error(text),
    env: (name: string) => Deno.env.get(name),
    // The tasks may write anywhere so that any KV location works; once the KV is open, the process writes nothing else,
    // and starts no program (only `run` does, and it opens no KV), unless the gateway runs stdio MCP servers.
    onKvOpen: (needs?: ProcessNeeds) => {
      dropWritePermission();
      if (!needs?.run) dropRunPermission();
    },
  };
  let serving = false;
  try {
    const args = parseArgs(defaultArgs(Deno.args, io.env));
    serving = args.words[0] === "serve";
    Deno.exitCode = await runCli(args, io);
  } catch (err) {
    io.err(err instanceof Error ? err.message : String(err));
    Deno.exitCode = 1;
  }
  // A gateway that has stopped ends once nothing is left to run, so the runtime's last telemetry export comes after
  // the program: with tracing on, Deno.exit() can hang the process for good, as that export may wait for the program's
  // thread, which Deno.exit() keeps waiting for the export (docs/operating.md, "Stopping"). Only should something still
  // hold the process, such as a write to a client that reads nothing (the runtime keeps it pending for as long as that
  // client stays), is it ended a second later all the same: the grace period is a bound.
  if (serving) Deno.unrefTimer(setTimeout(() => exitHeld(io.err), HELD_EXIT_MS));
}
