/**
 * @module The CLI's `operator-key` commands: mint a person's admin API key (its secret printed once), list keys
 * (never their secrets), revoke one; through the same service as the admin API, recorded as "cli".
 */
import { parseDuration } from "../core/duration.ts";
import { flag, withService } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, printable, table } from "./print.ts";

/** `operator-key create|list|revoke`. */
export async function operatorKeyCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, action, id] = args.words;
  switch (action) {
    case "create":
      return await withService(args, io, async (service) => {
        const expiresIn = flag(args, "expires-in");
        const expires_at = expiresIn === undefined
          ? flag(args, "expires-at")
          : new Date(Date.now() + parseDuration(expiresIn)).toISOString();
        const { key, secret } = await service.createOperatorKey({
          name: flag(args, "name"),
          role: flag(args, "role"),
          expires_at,
        });
        if (args.flags.json) return io.out(jsonText({ key, secret })), 0;
        io.err(
          `Minted operator key ${key.id} for "${printable(key.name)}" (${key.role}), expires ${key.expires_at}. ` +
            "Shown once:",
        );
        io.out(secret);
        return 0;
      });
    case "list":
      return await withService(args, io, async (service) => {
        const keys = await service.listOperatorKeys();
        if (args.flags.json) return io.out(jsonText(keys)), 0;
        const rows = keys.map((k) => [
          k.id,
          k.name,
          k.role,
          k.created_at,
          k.expires_at,
          k.revoked ? "revoked" : Date.parse(k.expires_at) <= Date.now() ? "expired" : "active",
        ]);
        io.out(table([["ID", "NAME", "ROLE", "CREATED", "EXPIRES", "STATUS"], ...rows]));
        return 0;
      });
    case "revoke":
      if (!id) break;
      return await withService(args, io, async (service) => {
        const key = await service.revokeOperatorKey(id);
        io.err(`Revoked operator key ${key.id} ("${printable(key.name)}")`);
        return 0;
      });
  }
  io.err(help);
  return 2;
}
