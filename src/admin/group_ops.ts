/**
 * @module The admin service's operations on groups: creating, reading, changing and deleting them, with their models,
 * MCP servers and guardrails checked against the config. A group the config file defines is read-only here (the config rewrites
 * it at every start), and a group still held by a token that works cannot be deleted. Every change is recorded in the
 * audit trail.
 */
import type { GroupPatch } from "../access/store.ts";
import type { Group } from "../core/principal.ts";
import { fieldPath, invalidField } from "../core/validation.ts";
import type { OperatorOpsContext } from "./operator_ops.ts";
import { conflict, notFound } from "./refusals.ts";
import { GroupCreate, GroupUpdate, parseInput } from "./schemas.ts";

/** What the group operations need of the service. */
export interface GroupOpsContext extends Omit<OperatorOpsContext, "ctx"> {
  ctx: OperatorOpsContext["ctx"] & {
    /** True when some upstream serves the public model id. */
    served(model: string): boolean;
  };
}

/** The group operations, spread into the admin service. */
export function groupOps({ ctx, mayChange, record }: GroupOpsContext) {
  const { store } = ctx;
  const configGroups = new Set(ctx.config.groups.map((group) => group.name));

  function checkModels(models: readonly string[]): void {
    models.forEach((model, i) => {
      if (!ctx.served(model)) throw invalidField(fieldPath(["models", i]), `no upstream serves model "${model}"`);
    });
  }
  function checkServers(grant: Group["mcp"]): void {
    const configured = new Set(ctx.config.mcp_servers.map((server) => server.name));
    for (const server of Object.keys(grant ?? {})) {
      if (!configured.has(server)) {
        throw invalidField(fieldPath(["mcp", server]), `no MCP server "${server}" in mcp_servers`);
      }
    }
  }
  function checkGuardrails(names: readonly string[]): void {
    const configured = new Set(ctx.config.guardrails.map((rule) => rule.name));
    names.forEach((name, i) => {
      if (!configured.has(name)) throw invalidField(fieldPath(["guardrails", i]), `no guardrail is named "${name}"`);
      if (names.indexOf(name) !== i) throw invalidField(fieldPath(["guardrails", i]), `"${name}" is named twice`);
    });
  }
  function editable(name: string): void {
    if (configGroups.has(name)) {
      throw conflict(`Group "${name}" is defined in the config file, which rewrites it at every start; edit it there`);
    }
  }

  return {
    async createGroup(input: unknown): Promise<Group> {
      mayChange();
      const body = parseInput(GroupCreate, input);
      checkModels(body.models);
      checkServers(body.mcp);
      checkGuardrails(body.guardrails ?? []);
      if (!await store.createGroup(body)) throw conflict(`Group "${body.name}" already exists`);
      await record("group.create", body.name, null, body);
      return body;
    },
    listGroups: (): Promise<Group[]> => store.listGroups(),
    async getGroup(name: string): Promise<Group> {
      return await store.getGroup(name) ?? Promise.reject(notFound("Group", name));
    },
    async updateGroup(name: string, input: unknown): Promise<Group> {
      mayChange();
      const body = parseInput(GroupUpdate, input);
      const before = await store.getGroup(name);
      if (!before) throw notFound("Group", name);
      editable(name);
      if (body.models) checkModels(body.models);
      if (body.mcp) checkServers(body.mcp);
      if (body.guardrails) checkGuardrails(body.guardrails);
      // Fields left out (or given as undefined by the CLI) keep their value; null limits clear them.
      const patch: GroupPatch = {};
      if (body.listing !== undefined) patch.listing = body.listing;
      if (body.models !== undefined) patch.models = body.models;
      if (body.limits !== undefined) patch.limits = body.limits ?? undefined;
      if (body.mcp !== undefined) patch.mcp = body.mcp ?? undefined;
      if (body.guardrails !== undefined) patch.guardrails = body.guardrails ?? undefined;
      const after = await store.updateGroup(name, patch);
      if (!after) throw notFound("Group", name);
      await record("group.update", name, before, after);
      return after;
    },
    async deleteGroup(name: string): Promise<{ deleted: string }> {
      mayChange();
      const before = await store.getGroup(name);
      if (!before) throw notFound("Group", name);
      editable(name);
      // Revoked tokens do not hold a group; re-enabling one whose group is gone gives a clear 403 at auth.
      const users = (await store.listTokens()).filter((token) => token.group === name && !token.disabled);
      if (users.length > 0) {
        throw conflict(
          `Group "${name}" is used by ${users.length} token(s), e.g. "${users[0].id}"; move or revoke them first`,
        );
      }
      if (!await store.deleteGroup(name)) throw notFound("Group", name);
      await record("group.delete", name, before, null);
      return { deleted: name };
    },
  };
}
