/** @module The modelgate command line: `deno task start` runs `serve`, `deno task cli ...` the rest. */
import { parseArgs } from "./src/cli/args.ts";
import { runCli } from "./src/cli/commands.ts";
import { defaultArgs, dropWritePermission } from "./src/runtime.ts";

if (import.meta.main) {
  const io = {
    out: (text: string) => console.log(text),
    err: (text: string) => console.error(text),
    env: (name: string) => Deno.env.get(name),
    // The tasks may write anywhere so that any KV location works; once the KV is open, the process writes nothing else.
    onKvOpen: dropWritePermission,
  };
  try {
    Deno.exitCode = await runCli(parseArgs(defaultArgs(Deno.args, io.env)), io);
  } catch (err) {
    io.err(err instanceof Error ? err.message : String(err));
    Deno.exitCode = 1;
  }
}
