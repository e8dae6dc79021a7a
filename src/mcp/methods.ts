/**
 * @module The MCP methods the gateway answers for a client besides the listings (./listings.ts): initialize, and the
 * calls (tools/call, prompts/get, resources/read) planned as a call on one server under the thing's own name.
 * Anything the group may not use is refused here, as an unknown name, and never reaches a server.
 */
import type { McpGrant } from "../core/mcp_config.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { McpHub } from "./hub.ts";
import { CODES, paramsOf, RpcError, type RpcRequest, stringParam } from "./jsonrpc.ts";
import { grantedHere } from "./listings.ts";
import { allows, exposedUri, originalUri, serverOf } from "./names.ts";

/** The protocol versions a client may agree with the gateway, newest first (see docs/mcp.md, "Protocol versions"). */
export const CLIENT_VERSIONS = ["2025-11-25", "2025-06-18"];

/** What a call is: where it goes and how its result comes back. */
export interface CallPlan {
  server: string;
  /** The tool's or prompt's own name on its server, or the resource's own URI. */
  name: string;
  /** The request as the server gets it. */
  request: RpcRequest;
  /** The server's result as the client gets it (URIs of the server's resources made the gateway's). */
  finish(result: JsonObject): JsonObject;
}

/** The gateway's answer to `initialize`: the version agreed (the client's, else the newest) and the result. */
export function initialize(request: RpcRequest): { version: string; result: JsonObject } {
  const asked = paramsOf(request).protocolVersion;
  if (typeof asked !== "string") {
    throw new RpcError(CODES.invalidParams, "Invalid params: protocolVersion must be a string");
  }
  const version = CLIENT_VERSIONS.includes(asked) ? asked : CLIENT_VERSIONS[0];
  return {
    version,
    result: {
      protocolVersion: version,
      capabilities: { tools: {}, prompts: {}, resources: {} },
      serverInfo: { name: "modelgate", title: "modelgate: the team's MCP servers", version: "1.0.0" },
      instructions: "The tools, prompts and resources of the team's MCP servers that your token's group may use. " +
        "Each name starts with the name of its server and an underscore.",
    },
  };
}

/** A content item (of a tool result or a prompt message) with its resource URI made the gateway's. */
function exposeContent(server: string, item: unknown): unknown {
  if (!isObject(item)) return item;
  if (item.type === "resource_link" && typeof item.uri === "string") {
    return { ...item, uri: exposedUri(server, item.uri) };
  }
  if (item.type === "resource" && isObject(item.resource) && typeof item.resource.uri === "string") {
    return { ...item, resource: { ...item.resource, uri: exposedUri(server, item.resource.uri) } };
  }
  return item;
}

/** The plan of a tools/call or prompts/get: the server and name behind an exposed name the group may use. */
async function namedPlan(
  hub: McpHub,
  grant: McpGrant | undefined,
  request: RpcRequest,
  kind: "tools" | "prompts",
): Promise<CallPlan> {
  const params = paramsOf(request);
  const exposed = stringParam(params, "name");
  const what = kind === "tools" ? "tool" : "prompt";
  // Made only when thrown: an Error captures its stack, which every call would pay for.
  const unknown = () => new RpcError(CODES.invalidParams, `Unknown ${what}: ${exposed}`, { outcome: "refused" });
  const server = serverOf(exposed);
  if (!server || !grantedHere(hub, grant).includes(server)) throw unknown();
  const name = (await hub.catalog.listing(server)).names[kind].own.get(exposed);
  if (name === undefined || !allows(grant, server, kind, name)) throw unknown();
  return {
    server,
    name,
    request: { ...request, params: { ...params, name } },
    finish: kind === "tools"
      ? (result) =>
        Array.isArray(result.content)
          ? { ...result, content: result.content.map((item) => exposeContent(server, item)) }
          : result
      : (result) =>
        Array.isArray(result.messages)
          ? {
            ...result,
            messages: result.messages.map((message) =>
              isObject(message) ? { ...message, content: exposeContent(server, message.content) } : message
            ),
          }
          : result,
  };
}

/** The plan of a resources/read: the server and URI behind an exposed URI the group may read. */
function resourcePlan(hub: McpHub, grant: McpGrant | undefined, request: RpcRequest): CallPlan {
  const params = paramsOf(request);
  const exposed = stringParam(params, "uri");
  const found = originalUri(exposed);
  if (
    !found || !grantedHere(hub, grant).includes(found.server) || !allows(grant, found.server, "resources", found.uri)
  ) {
    throw new RpcError(CODES.resourceNotFound, `Resource not found: ${exposed}`, { outcome: "refused" });
  }
  const { server, uri } = found;
  return {
    server,
    name: uri,
    request: { ...request, params: { ...params, uri } },
    finish: (result) =>
      Array.isArray(result.contents)
        ? {
          ...result,
          contents: result.contents.map((item) =>
            isObject(item) && typeof item.uri === "string" ? { ...item, uri: exposedUri(server, item.uri) } : item
          ),
        }
        : result,
  };
}

/** The plan of a call method, or undefined for any other method. */
export async function planCall(
  hub: McpHub,
  grant: McpGrant | undefined,
  request: RpcRequest,
): Promise<CallPlan | undefined> {
  if (request.method === "tools/call") return await namedPlan(hub, grant, request, "tools");
  if (request.method === "prompts/get") return await namedPlan(hub, grant, request, "prompts");
  if (request.method === "resources/read") return resourcePlan(hub, grant, request);
  return undefined;
}
