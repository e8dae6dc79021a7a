/**
 * @module Tracing of /mcp as an operator sees it: a gateway process with OTEL_DENO=true exports a CLIENT span per call
 * through /mcp with the MCP conventions' attributes, the server gets its traceparent, a tool's own failure is the
 * span's error, and a tool's arguments and result are exported only with the content opt-in, the servers' credentials
 * (an HTTP server's, a stdio server's secret) taken out of them in every form the client's answer hid them in: plain,
 * `\u`-escaped in JSON text, nested in structured content.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { connectMcp, DOCS_AUTH } from "../_mcp_gateway.ts";
import { McpServer } from "../_mcp_sdk.ts";
import { docsServer, startMcpHttpServer, stdioCommand } from "../_mcp_servers.ts";
import { attr, otlpEnv, otlpReceiver, type OtlpSpan, text } from "../_otlp_receiver.ts";
import { cliToken, denoMain, startProcess } from "../_process.ts";

const ARGUMENT = "ARGUMENT-TEXT-okapi-2718";

/** The config of the traced gateway: the docs server with its credential, and a stdio server (never started) whose
 * secret is one of the gateway's. */
function configYaml(dir: string, docsUrl: string): string {
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(`${dir}/gateway.kv`)}
upstreams:
  - { name: up, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: TEST_UP_KEY, models: [m1] }
groups:
  - { name: default, listing: anthropic, models: [m1], mcp: { docs: "*", local: "*" } }
mcp_servers:
  - { name: docs, url: "${docsUrl}", headers: { Authorization: DOCS_AUTH } }
  - name: local
    command: ${JSON.stringify(stdioCommand())}
    env: { LOCAL_TOKEN: LOCAL_TOKEN }
`;
}

const CREDENTIAL = DOCS_AUTH.slice("Bearer ".length);
const LOCAL_SECRET = "local-stdio-secret-0123456789";

/** The docs server with a `quote` tool more: its credential plainly, `\u`-escaped in JSON text and nested, and `say`. */
function quoting(seen: string[]): McpServer {
  const server = docsServer(seen);
  const escaped = [...CREDENTIAL].map((c, i) => i < 3 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c);
  server.registerTool(
    "quote",
    { description: "Quotes its credential", inputSchema: { say: z.string() } },
    ({ say }) => ({
      content: [
        { type: "text", text: `plain: ${CREDENTIAL}` },
        { type: "text", text: `{"key": "${escaped.join("")}"}` },
        { type: "text", text: say },
      ],
      structuredContent: { deep: { deeper: [{ key: CREDENTIAL }] } },
    }),
  );
  return server;
}

/** With content captured: what the client got of `quote` and its span's content, each form of each secret hidden. */
function assertRedacted(quoted: Record<string, unknown>, quote: OtlpSpan): void {
  const answer = JSON.stringify(quoted);
  assert.match(answer, /plain: \[redacted\]/);
  assert.match(answer, /\{\\"key\\": \\"\[redacted\]\\"\}/);
  assert.match(answer, /say \[redacted\]/);
  assert.deepEqual(quoted.structuredContent, { deep: { deeper: [{ key: "[redacted]" }] } });
  assert.equal(text(quote, "gen_ai.tool.call.arguments"), '{"say":"say [redacted]"}');
  const result = JSON.parse(text(quote, "gen_ai.tool.call.result")!);
  assert.deepEqual(result.content.map((item: { text: string }) => item.text), [
    "plain: [redacted]",
    '{"key": "[redacted]"}',
    "say [redacted]",
  ]);
  assert.deepEqual(result.structuredContent, { deep: { deeper: [{ key: "[redacted]" }] } });
}

const str = (value: string) => ({ stringValue: value });

for (const capture of [false, true]) {
  const title = capture
    ? "with content captured, a tool's arguments and result too, without credentials"
    : "and no content";
  Deno.test(`each call through /mcp is a CLIENT span with the MCP attributes, ${title}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelgate-mcp-tracing-" });
    await using receiver = otlpReceiver();
    await using docs = startMcpHttpServer(quoting);
    try {
      const configFile = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(configFile, configYaml(dir, docs.url));
      const env = {
        TEST_UP_KEY: "k",
        DOCS_AUTH,
        LOCAL_TOKEN: LOCAL_SECRET,
        ...otlpEnv(receiver),
        ...capture ? { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" } : {},
      };
      const { token } = await cliToken(dir, configFile, env);
      // The config has a stdio server: `deno task start`'s permission to start programs, which the tests' command lacks.
      const command = denoMain(dir, "serve", "--config", configFile);
      command.splice(2, 0, "--allow-run");
      await using gateway = await startProcess({ command, env });
      const client = await connectMcp(gateway.url, token);
      const session = client.transport.sessionId!;
      await client.callTool({ name: "docs_search", arguments: { query: ARGUMENT } });
      await client.callTool({ name: "docs_fail", arguments: {} });
      // The stdio server's secret reaches the span through the call's arguments and the docs server's echo of them.
      const quoted = await client.callTool({ name: "docs_quote", arguments: { say: `say ${LOCAL_SECRET}` } });
      await client.close();

      const search = await receiver.waitFor(
        "the search span",
        () => receiver.spans.find((s) => s.name === "tools/call search"),
      );
      assert.equal(search.kind, 3, "a CLIENT span");
      const want: Record<string, unknown> = {
        "mcp.method.name": str("tools/call"),
        "gen_ai.operation.name": str("execute_tool"),
        "gen_ai.tool.name": str("search"),
        "mcp.session.id": str(session),
        "jsonrpc.request.id": str("1"),
        "network.transport": str("tcp"),
        "modelgate.mcp.server": str("docs"),
      };
      for (const [key, value] of Object.entries(want)) assert.deepEqual(attr(search, key), value, key);
      assert.equal(attr(search, "error.type"), undefined);
      // The call's fetch runs under its span: the server was sent a traceparent of that trace.
      const sent = docs.headers.map((h) => h.get("traceparent")).filter((t) => t?.includes(search.traceId));
      assert.ok(sent.length > 0, "the docs server got the call's traceparent");

      const failed = await receiver.waitFor(
        "the fail span",
        () => receiver.spans.find((s) => s.name === "tools/call fail"),
      );
      assert.deepEqual(attr(failed, "error.type"), str("tool_error"));
      assert.equal(failed.status.code, 2);

      const duration = await receiver.waitFor(
        "the MCP duration metric",
        () => receiver.points.find((p) => p.metric === "mcp.client.operation.duration"),
      );
      assert.deepEqual(duration.attributes["mcp.method.name"], str("tools/call"));

      const exported = receiver.raw.join("\n");
      if (capture) {
        const quote = await receiver.waitFor(
          "the quote span",
          () => receiver.spans.find((s) => s.name === "tools/call quote"),
        );
        assertRedacted(quoted, quote);
        assert.deepEqual(attr(search, "gen_ai.tool.call.arguments"), str(JSON.stringify({ query: ARGUMENT })));
        assert.match(
          String((attr(search, "gen_ai.tool.call.result") as { stringValue: string }).stringValue),
          /found: /,
        );
      } else {
        assert.ok(!exported.includes(ARGUMENT), "no argument is exported without the opt-in");
        assert.equal(attr(search, "gen_ai.tool.call.result"), undefined);
      }
      assert.ok(!exported.includes(token), "the token is never exported");
      // Nor either secret, in any spelling: the escaped one keeps the end of the credential as it is.
      for (const secret of [CREDENTIAL, CREDENTIAL.slice(3), LOCAL_SECRET]) {
        assert.ok(!exported.includes(secret), secret);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
