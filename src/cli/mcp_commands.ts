/**
 * @module The CLI's `mcp grants` commands: the OAuth grants MCP clients hold on /mcp (client, person, group, when
 * made, refreshed and ending; never a secret), and revoking one; through the same service as the admin API, recorded
 * as "cli".
 */
import { withService } from "./admin_commands.ts";
import type { Args, Io } from "./args.ts";
import { jsonText, table } from "./print.ts";

/** `mcp grants list|revoke`. */
export async function mcpCommand(args: Args, io: Io, help: string): Promise<number> {
  const [, noun, action, id] = args.words;
  if (noun === "grants" && action === "list") {
    return await withService(args, io, async (service) => {
      const grants = await service.listOAuthGrants();
      if (args.flags.json) return io.out(jsonText(grants)), 0;
      const rows = grants.map((g) => [
        g.id,
        g.client_name,
        g.person ?? g.token ?? "",
        g.group ?? "(none now)",
        g.created_at,
        g.refreshed_at ?? "",
        g.expires_at,
      ]);
      io.out(table([["ID", "CLIENT", "PERSON", "GROUP", "CREATED", "REFRESHED", "ENDS"], ...rows]));
      return 0;
    });
  }
  if (noun === "grants" && action === "revoke" && id) {
    return await withService(args, io, async (service) => {
      const grant = await service.revokeOAuthGrant(id);
      io.err(
        `Revoked OAuth grant ${grant.id} of ${grant.person ?? grant.token} for ${JSON.stringify(grant.client_name)}`,
      );
      return 0;
    });
  }
  io.err(help);
  return 2;
}
