/**
 * @module The span of one call through /mcp, as the OpenTelemetry conventions for MCP describe a client's: named
 * `{mcp.method.name} {target}`, with the method, the tool or prompt, the session, the request id and the transport;
 * a tool's arguments and result only when the operator opted in to content, the servers' credentials taken out of them
 * as out of a client's answer; and the conventions' duration metric.
 */
import {
  type Context,
  context,
  type Histogram,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";
import type { McpAnswer, McpCallTrace } from "../core/exchange.ts";
import type { JsonObject } from "../core/types.ts";

/** What a call's span is made with. */
export interface McpSpanOptions {
  tracer: Tracer;
  /** `mcp.client.operation.duration`. */
  duration: Histogram;
  captureContent?: boolean;
  now(): number;
}

/** The conventions' attributes of a call, before its answer. */
export function callAttributes(call: McpCallTrace): Record<string, string> {
  const out: Record<string, string> = {
    "mcp.method.name": call.method,
    "mcp.session.id": call.session,
    "jsonrpc.request.id": String(call.requestId),
    "jsonrpc.protocol.version": "2.0",
    // A pipe for a server the gateway runs, TCP for one it reaches over HTTP.
    "network.transport": call.transport === "stdio" ? "pipe" : "tcp",
    "modelgate.mcp.server": call.server,
  };
  if (call.method === "tools/call") {
    out["gen_ai.operation.name"] = "execute_tool";
    out["gen_ai.tool.name"] = call.target;
  } else if (call.method === "prompts/get") out["gen_ai.prompt.name"] = call.target;
  else if (call.method === "resources/read") out["mcp.resource.uri"] = call.target;
  return out;
}

/** The `error.type` of an answer: its JSON-RPC code, `tool_error` for a tool that reported a failure, else none. */
export function answerErrorType(answer: McpAnswer): string | undefined {
  if (answer.error) return String(answer.error.code);
  return answer.result?.isError === true ? "tool_error" : undefined;
}

/** Runs `run` under the call's span, in `parent`. */
export async function mcpSpan<T extends McpAnswer>(
  options: McpSpanOptions,
  parent: Context,
  call: McpCallTrace,
  run: () => Promise<T>,
): Promise<T> {
  // Resources are left out of the name: a URI may be of any cardinality.
  const name = call.method === "resources/read" ? call.method : `${call.method} ${call.target}`;
  const span = options.tracer.startSpan(name, { kind: SpanKind.CLIENT }, parent);
  const started = options.now();
  const attributes: Record<string, string> = callAttributes(call);
  if (span.isRecording()) {
    span.setAttributes(attributes);
    if (options.captureContent && call.method === "tools/call") {
      span.setAttribute("gen_ai.tool.call.arguments", call.redact(JSON.stringify(call.params.arguments ?? {})));
    }
  }
  let errorType: string | undefined;
  try {
    // The call runs in the span's context, so the runtime's fetch span (and its traceparent) sit beneath it.
    const answer = await context.with(trace.setSpan(parent, span), run);
    errorType = answerErrorType(answer);
    if (answer.error) span.setAttribute("rpc.response.status_code", String(answer.error.code));
    if (options.captureContent && call.method === "tools/call" && answer.result) {
      span.setAttribute("gen_ai.tool.call.result", call.redact(JSON.stringify(resultContent(answer.result))));
    }
    return answer;
  } catch (err) {
    errorType = (err as { outcome?: string })?.outcome ?? "error";
    throw err;
  } finally {
    if (errorType) {
      span.setAttribute("error.type", errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
    const labels: Record<string, string> = {
      "mcp.method.name": call.method,
      "network.transport": attributes["network.transport"],
      ...attributes["gen_ai.tool.name"] ? { "gen_ai.tool.name": attributes["gen_ai.tool.name"] } : {},
      ...errorType ? { "error.type": errorType } : {},
    };
    options.duration.record((options.now() - started) / 1000, labels);
  }
}

/** What of a tool's result goes on the span: its content and structured content. */
function resultContent(result: JsonObject): JsonObject {
  const out: JsonObject = {};
  if (result.content !== undefined) out.content = result.content;
  if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
  return out;
}
