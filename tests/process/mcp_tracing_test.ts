/**
 * @module Tracing of /mcp as an operator sees it: a gateway process with OTEL_DENO=true exports a CLIENT span per call
 * through /mcp with the MCP conventions' attributes, the server gets its traceparent, a tool's own failure is the
 * span's error, and a tool's arguments and result are exported only with the content opt-in, the servers' credentials
 * taken out of them in every form the client's answer hid them in.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { connectMcp, DOCS_AUTH } from "../_mcp_gateway.ts";
import { McpServer } from "../_mcp_sdk.ts";
import { startMcpHttpServer, stdioCommand } from "../_mcp_servers.ts";
import { attr, otlpEnv, otlpReceiver, text } from "../_otlp_receiver.ts";
import { cliToken, denoMain, startProcess } from "../_process.ts";

const ARGUMENT = "ARGUMENT-TEXT-okapi-2718";

/** The config of the traced gateway; `credentialed` gives the docs server its credential and adds the stdio server. */
function configYaml(dir: string, docsUrl: string, credentialed = false): string {
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(`${dir}/gateway.kv`)}
upstreams:
  - { name: up, protocol: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: TEST_UP_KEY, models: [m1] }
groups:
  - { name: default, listing: anthropic, models: [m1], mcp: { docs: "*"${credentialed ? ', local: "*"' : ""} } }
mcp_servers:
  - { name: docs, url: "${docsUrl}"${credentialed ? ", headers: { Authorization: DOCS_AUTH }" : ""} }
${
    credentialed
      ? `  - name: local
    command: ${JSON.stringify(stdioCommand())}
    env: { HOME: HOME, DENO_DIR: DENO_DIR, LOCAL_TOKEN: LOCAL_TOKEN }
    list_timeout_ms: 20000`
      : ""
  }
`;
}

const str = (value: string) => ({ stringValue: value });

for (const capture of [false, true]) {
  const title = capture ? "with content captured, a tool's arguments and result too" : "and no content";
  Deno.test(`each call through /mcp is a CLIENT span with the MCP attributes, ${title}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "modelgate-mcp-tracing-" });
    await using receiver = otlpReceiver();
    await using docs = startMcpHttpServer();
    try {
      const configFile = `${dir}/gateway.yaml`;
      await Deno.writeTextFile(configFile, configYaml(dir, docs.url));
      const env = {
        TEST_UP_KEY: "k",
        ...otlpEnv(receiver),
        ...capture ? { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" } : {},
      };
      const { token } = await cliToken(dir, configFile, env);
      await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
      const client = await connectMcp(gateway.url, token);
      const session = client.transport.sessionId!;
      await client.callTool({ name: "docs_search", arguments: { query: ARGUMENT } });
      await client.callTool({ name: "docs_fail", arguments: {} });
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
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

const CREDENTIAL = DOCS_AUTH.slice("Bearer ".length);
const LOCAL_SECRET = "local-stdio-secret-0123456789";

/** A server whose `quote` tool returns its credential plainly, `\u`-escaped in JSON text and nested, and echoes `say`. */
function quoting(): McpServer {
  const server = new McpServer({ name: "docs", version: "1" });
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

Deno.test("a tools/call span's arguments and result hold no credential in any form the client's answer hid", async () => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-mcp-trace-redaction-" });
  await using receiver = otlpReceiver();
  await using docs = startMcpHttpServer(quoting);
  try {
    const configFile = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(configFile, configYaml(dir, docs.url, true));
    const env = {
      TEST_UP_KEY: "k",
      LOCAL_TOKEN: LOCAL_SECRET,
      DOCS_AUTH,
      ...otlpEnv(receiver),
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
    };
    const { token } = await cliToken(dir, configFile, env);
    // The stdio server is configured (so its secret is one of the gateway's) and never started: its secret reaches the
    // span through a call's arguments and the docs server's echo of them.
    const command = denoMain(dir, "serve", "--config", configFile);
    command.splice(2, 0, "--allow-run");
    await using gateway = await startProcess({ command, env });
    const client = await connectMcp(gateway.url, token);
    const quoted = await client.callTool({ name: "docs_quote", arguments: { say: `say ${LOCAL_SECRET}` } });
    await client.close();
    // What the client got, each form hidden.
    const answer = JSON.stringify(quoted);
    assert.match(answer, /plain: \[redacted\]/);
    assert.match(answer, /\{\\"key\\": \\"\[redacted\]\\"\}/);
    assert.match(answer, /say \[redacted\]/);
    assert.deepEqual(quoted.structuredContent, { deep: { deeper: [{ key: "[redacted]" }] } });

    const quote = await receiver.waitFor(
      "the quote span",
      () => receiver.spans.find((s) => s.name === "tools/call quote"),
    );
    assert.equal(text(quote, "gen_ai.tool.call.arguments"), '{"say":"say [redacted]"}');
    const result = JSON.parse(text(quote, "gen_ai.tool.call.result")!);
    assert.deepEqual(result.content.map((item: { text: string }) => item.text), [
      "plain: [redacted]",
      '{"key": "[redacted]"}',
      "say [redacted]",
    ]);
    assert.deepEqual(result.structuredContent, { deep: { deeper: [{ key: "[redacted]" }] } });
    // Nothing exported holds either, in any spelling: the escaped one keeps the end of the credential as it is.
    const exported = receiver.raw.join("\n");
    for (const secret of [CREDENTIAL, CREDENTIAL.slice(3), LOCAL_SECRET]) assert.ok(!exported.includes(secret), secret);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
