/**
 * @module Tracing as an operator sees it: a gateway process with OTEL_DENO=true exports to an OTLP/HTTP receiver on
 * 127.0.0.1, and what arrives is checked: the span tree of passthrough, translated, streamed, failed-over and
 * abandoned requests and an embeddings request, every GenAI attribute with its type, the traceparent the upstream got and the one a client
 * sent, the GenAI metrics, the trace ids in the log lines, and that no secret or prompt text is ever exported.
 */
import assert from "node:assert/strict";
import { controlledStream, fakeUpstream, firstThen, jsonReply, sseReply } from "../_fake_upstream.ts";
import { anthropicMessage, bodyReader, fixture, readSse, readText, waitFor, within } from "../_helpers.ts";
import { attr, fetchUnder, otlpEnv, otlpReceiver, text, treeOf } from "../_otlp_receiver.ts";
import { denoMain, runCommand, startProcess } from "../_process.ts";

const PROMPT = "PROMPT-TEXT-zebra-4711";
/** The model's answer: like the prompt, never exported without the operator's content opt-in. */
const ANSWER = "ANSWER-TEXT-otter-0815";
const KEYS = { TEST_ANTHROPIC_KEY: "upstream-anthropic-key-otel", TEST_OPENAI_KEY: "upstream-openai-key-otel" };
const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";

function configYaml(dir: string, upstream: string): string {
  const anthropic = (name: string, extra = "") =>
    `  - { name: ${name}, protocol: anthropic, base_url: "${upstream}/${name}/v1", api_key_env: TEST_ANTHROPIC_KEY${extra} }`;
  return `
listen: { host: 127.0.0.1, port: 0 }
kv_path: ${JSON.stringify(`${dir}/gateway.kv`)}
currency: USD
upstreams:
${
    anthropic(
      "anth",
      ", models: [{ id: m-claude, price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } }]",
    )
  }
  - name: chat
    protocol: openai
    base_url: "${upstream}/chat/v1"
    api_key_env: TEST_OPENAI_KEY
    models: [m-gpt, { id: m-embed, upstream_id: text-embedding-3-small, kind: embedding }]
${anthropic("flaky", ", priority: 1, models: [m-fail]")}
${anthropic("steady", ", models: [m-fail]")}
${anthropic("pausing", ", models: [m-wait]")}
groups:
  - { name: default, listing: anthropic, models: [m-claude, m-gpt, m-fail, m-wait, m-embed] }
`;
}

const str = (value: string) => ({ stringValue: value });
const int = (value: number) => ({ intValue: String(value) });

Deno.test("a gateway with OTEL_DENO=true exports GenAI spans, metrics and log ids, and never a secret", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "modelgate-tracing-" });
  await using receiver = otlpReceiver();
  await using upstream = fakeUpstream();
  const telemetry = otlpEnv(receiver);
  try {
    const configFile = `${dir}/gateway.yaml`;
    await Deno.writeTextFile(configFile, configYaml(dir, upstream.url));
    const env = { ...KEYS, ...telemetry };
    const created = await runCommand(
      denoMain(dir, "token", "create", "--group", "default", "--owner", "alice@example.com", "--config", configFile),
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const secret = created.stdout.trim();
    const tokenId = /Created token (tok_[0-9a-f]+)/.exec(created.stderr)?.[1];
    assert.match(secret, /^sk-/);

    await t.step("the CLI's new secret reaches its stdout but no exported log record", async () => {
      // The CLI's notice on stderr is exported (console output is); once it is in, the secret would be beside it.
      await receiver.waitFor("the CLI's log record", () => receiver.logs.find((log) => log.includes(tokenId!)));
      assert.ok(receiver.raw.every((body) => !body.includes(secret)), "the secret was exported");
    });

    await using gateway = await startProcess({ command: denoMain(dir, "serve", "--config", configFile), env });
    const post = (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      fetch(`${gateway.url}${path}`, {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const user = [{ role: "user", content: PROMPT }];

    await t.step("a passthrough request: model span, attempt, fetch, attributes and types, traceparents", async () => {
      upstream.routes.set("POST /anth/v1/messages", () =>
        jsonReply({
          ...anthropicMessage(ANSWER),
          usage: { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: 4, cache_creation_input_tokens: 3 },
        }));
      const res = await post("/v1/messages", { model: "m-claude", max_tokens: 64, temperature: 0.5, messages: user }, {
        "x-request-id": "req-pass",
        "x-claude-code-session-id": "session-1",
        traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
      });
      assert.equal(res.status, 200, await readText(res));
      const { model, attempts, server } = await treeOf(receiver, "req-pass");
      assert.equal(model.name, "chat m-claude");
      assert.equal(model.kind, 3, "the model span is a CLIENT span");
      assert.equal(model.traceId, CLIENT_TRACE, "the client's trace is continued");
      assert.equal(server.kind, 2);
      assert.equal(server.parentSpanId, CLIENT_SPAN);
      const port = Number(new URL(upstream.url).port);
      const want: Record<string, unknown> = {
        "gen_ai.operation.name": str("chat"),
        "gen_ai.provider.name": str("anthropic"),
        "gen_ai.request.model": str("m-claude"),
        "gen_ai.response.model": str("claude-test"),
        "gen_ai.response.id": str("msg_up"),
        "gen_ai.request.max_tokens": int(64),
        "gen_ai.request.temperature": { doubleValue: 0.5 },
        "gen_ai.usage.input_tokens": int(12),
        "gen_ai.usage.output_tokens": int(2),
        "gen_ai.usage.cache_read.input_tokens": int(4),
        "gen_ai.usage.cache_creation.input_tokens": int(3),
        "gen_ai.response.finish_reasons": { arrayValue: { values: [str("end_turn")] } },
        "server.address": str("127.0.0.1"),
        "server.port": int(port),
        "modelgate.token.id": str(tokenId!),
        "enduser.id": str("alice@example.com"),
        "modelgate.group": str("default"),
        "modelgate.upstream": str("anth"),
        "modelgate.client.protocol": str("anthropic"),
        "modelgate.translated": { boolValue: false },
        "modelgate.cost": str("0.00005745"),
        "session.id": str("session-1"),
      };
      for (const [key, value] of Object.entries(want)) assert.deepEqual(attr(model, key), value, key);
      assert.equal(attr(model, "error.type"), undefined);
      assert.equal(attempts.length, 1);
      const [attempt] = attempts;
      assert.equal(attempt.name, "attempt anth");
      assert.deepEqual(attr(attempt, "http.response.status_code"), int(200));
      const fetched = await fetchUnder(receiver, attempt);
      const sent = upstream.requests.at(-1)!.headers.get("traceparent");
      assert.equal(sent, `00-${CLIENT_TRACE}-${fetched.spanId}-01`, "the upstream got the attempt's fetch as parent");
      // The request's log line, exported as a log record as everything the gateway prints is, names its spans.
      const logged = await receiver.waitFor(
        "the request's log line",
        () => receiver.logs.flatMap((log) => log.split("\n")).find((text) => text.includes('"request_id":"req-pass"')),
      );
      const line = JSON.parse(logged);
      assert.equal(line.trace_id, CLIENT_TRACE);
      assert.equal(line.span_id, server.spanId);
    });

    await t.step("a translated request names the client protocol and the upstream's provider", async () => {
      upstream.routes.set("POST /anth/v1/messages", () => jsonReply(anthropicMessage(ANSWER)));
      const res = await post("/v1/chat/completions", { model: "m-claude", messages: user }, {
        "x-request-id": "req-tr",
      });
      assert.equal(res.status, 200, await readText(res));
      const { model, attempts } = await treeOf(receiver, "req-tr");
      assert.deepEqual(attr(model, "modelgate.translated"), { boolValue: true });
      assert.deepEqual(attr(model, "modelgate.client.protocol"), str("openai-chat"));
      assert.deepEqual(attr(model, "gen_ai.provider.name"), str("anthropic"));
      assert.deepEqual(attr(model, "gen_ai.usage.input_tokens"), int(5));
      assert.equal(attempts.length, 1);
    });

    await t.step("a stream's model span ends with the stream, with its usage and time to first chunk", async () => {
      upstream.routes.set("POST /anth/v1/messages", () => sseReply(fixture("anthropic_text.sse")));
      const res = await post("/v1/messages", { model: "m-claude", max_tokens: 64, stream: true, messages: user }, {
        "x-request-id": "req-stream",
      });
      await readSse(res);
      const { model, attempts } = await treeOf(receiver, "req-stream");
      assert.deepEqual(attr(model, "gen_ai.usage.input_tokens"), int(9));
      assert.deepEqual(attr(model, "gen_ai.usage.output_tokens"), int(3));
      assert.deepEqual(attr(model, "gen_ai.response.id"), str("msg_1"));
      assert.deepEqual(attr(model, "gen_ai.response.finish_reasons"), { arrayValue: { values: [str("end_turn")] } });
      assert.deepEqual(attr(model, "modelgate.stream.end"), str("complete"));
      assert.ok("doubleValue" in attr(model, "gen_ai.response.time_to_first_chunk")!);
      assert.equal(attempts.length, 1);
    });

    await t.step("a failover shows the failed attempt with its status and the one that served", async () => {
      upstream.routes.set(
        "POST /flaky/v1/messages",
        () => jsonReply({ type: "error", error: { type: "overloaded_error", message: "busy" } }, 529),
      );
      upstream.routes.set("POST /steady/v1/messages", () => jsonReply(anthropicMessage()));
      const res = await post("/v1/messages", { model: "m-fail", max_tokens: 8, messages: user }, {
        "x-request-id": "req-failover",
      });
      assert.equal(res.status, 200, await readText(res));
      const { model, attempts } = await treeOf(receiver, "req-failover");
      const [first, second] = attempts;
      assert.equal(first.name, "attempt flaky");
      assert.deepEqual(attr(first, "http.response.status_code"), int(529));
      assert.deepEqual(attr(first, "error.type"), str("overloaded"));
      assert.equal(first.status.code, 2, "the failed attempt's status is ERROR");
      assert.equal(second.name, "attempt steady");
      assert.deepEqual(attr(second, "modelgate.attempt.outcome"), str("ok"));
      assert.deepEqual(attr(model, "modelgate.upstream"), str("steady"));
      await fetchUnder(receiver, first);
      await fetchUnder(receiver, second);
    });

    await t.step("a retry-after waited out is an event on the model span, between two attempts", async () => {
      upstream.routes.set(
        "POST /pausing/v1/messages",
        firstThen(
          () =>
            jsonReply({ type: "error", error: { type: "rate_limit_error", message: "slow" } }, 429, {
              "retry-after-ms": "20",
            }),
          () => jsonReply(anthropicMessage()),
        ),
      );
      const res = await post("/v1/messages", { model: "m-wait", max_tokens: 8, messages: user }, {
        "x-request-id": "req-wait",
      });
      assert.equal(res.status, 200, await readText(res));
      const { model, attempts } = await treeOf(receiver, "req-wait");
      assert.deepEqual(attempts.map((span) => text(span, "modelgate.attempt.outcome")), ["rate_limit", "ok"]);
      const wait = model.events.find((event) => event.name === "modelgate.retry_after.wait");
      // What is left of the 20 ms pause when the relay comes to wait it out, as an integer.
      const waited = Number((wait?.attributes["modelgate.wait_ms"] as { intValue?: string } | undefined)?.intValue);
      assert.ok(waited > 0 && waited <= 20, `waited ${waited} ms`);
    });

    await t.step("a failed call's model span has its error.type and status ERROR", async () => {
      upstream.routes.set(
        "POST /chat/v1/chat/completions",
        () => jsonReply({ error: { type: "invalid_request_error", message: "No" } }, 400),
      );
      const res = await post("/v1/messages", { model: "m-gpt", max_tokens: 8, messages: user }, {
        "x-request-id": "req-failed",
      });
      assert.equal(res.status, 400, await readText(res));
      const { model, attempts } = await treeOf(receiver, "req-failed");
      assert.deepEqual(attr(model, "error.type"), str("invalid_request"));
      assert.equal(model.status.code, 2);
      assert.deepEqual(attr(attempts[0], "http.response.status_code"), int(400));
    });

    await t.step("a client that leaves mid-stream ends the model span as left", async () => {
      const stream = controlledStream();
      upstream.routes.set("POST /chat/v1/chat/completions", () => stream.response);
      const seen = upstream.requests.length;
      const pending = post("/v1/messages", { model: "m-gpt", max_tokens: 8, stream: true, messages: user }, {
        "x-request-id": "req-left",
      });
      // The gateway answers once the upstream's first chunk is in; the client reads it, then goes away.
      await waitFor(() => upstream.requests[seen]);
      const chunk = { id: "chatcmpl-1", model: "gpt-test", choices: [{ index: 0, delta: { content: "Hi" } }] };
      stream.send(`data: ${JSON.stringify(chunk)}\n\n`);
      {
        await using body = bodyReader(await within(pending, 5000, "the stream's head"));
        await body.until((text) => text.includes("Hi"));
      }
      await within(upstream.requests[seen].closed, 5000, "the upstream call's end");
      const { model } = await treeOf(receiver, "req-left");
      assert.deepEqual(attr(model, "modelgate.stream.end"), str("client_left"));
      assert.deepEqual(attr(model, "modelgate.translated"), { boolValue: true });
      assert.deepEqual(attr(model, "gen_ai.provider.name"), str("openai"));
      assert.deepEqual(attr(model, "gen_ai.response.model"), str("gpt-test"));
    });

    await t.step(
      "an embeddings request is the conventions' embeddings operation, with its counts, not its text",
      async () => {
        upstream.routes.set("POST /chat/v1/embeddings", ({ body }) =>
          jsonReply({
            object: "list",
            data: (body!.input as string[]).map((_, index) => ({ object: "embedding", index, embedding: [0.5, 0.25] })),
            model: "text-embedding-3-small",
            usage: { prompt_tokens: 9, total_tokens: 9 },
          }));
        const res = await post("/v1/embeddings", { model: "m-embed", input: [PROMPT, PROMPT], dimensions: 2 }, {
          "x-request-id": "req-embed",
        });
        assert.equal(res.status, 200, await readText(res));
        const { model, attempts } = await treeOf(receiver, "req-embed");
        assert.equal(model.name, "embeddings m-embed");
        const want: Record<string, unknown> = {
          "gen_ai.operation.name": str("embeddings"),
          "gen_ai.provider.name": str("openai"),
          "gen_ai.request.model": str("m-embed"),
          "gen_ai.usage.input_tokens": int(9),
          "gen_ai.usage.output_tokens": int(0),
          "gen_ai.embeddings.dimension.count": int(2),
          "modelgate.embeddings.inputs": int(2),
        };
        for (const [key, value] of Object.entries(want)) assert.deepEqual(attr(model, key), value, key);
        assert.deepEqual(attempts.map((a) => a.name), ["attempt chat"]);
        await receiver.waitFor(
          "the embeddings operation's duration",
          () =>
            receiver.points.find((point) =>
              point.metric === "gen_ai.client.operation.duration" &&
              text(point, "gen_ai.operation.name") === "embeddings"
            ),
        );
      },
    );

    await t.step("the GenAI metrics arrive with bounded attributes", async () => {
      const tokens = await receiver.waitFor(
        "gen_ai.client.token.usage",
        () =>
          receiver.points.find((point) =>
            point.metric === "gen_ai.client.token.usage" &&
            text(point, "gen_ai.token.type") === "input" && text(point, "modelgate.upstream") === "anth"
          ),
      );
      assert.deepEqual(attr(tokens, "gen_ai.request.model"), str("m-claude"));
      assert.deepEqual(attr(tokens, "gen_ai.provider.name"), str("anthropic"));
      await receiver.waitFor(
        "gen_ai.client.operation.duration",
        () => receiver.points.find((point) => point.metric === "gen_ai.client.operation.duration"),
      );
      await receiver.waitFor(
        "gen_ai.client.operation.time_to_first_chunk",
        () => receiver.points.find((point) => point.metric === "gen_ai.client.operation.time_to_first_chunk"),
      );
      for (const point of receiver.points.filter((p) => p.metric.startsWith("gen_ai."))) {
        assert.equal(attr(point, "modelgate.request_id"), undefined);
        assert.equal(attr(point, "modelgate.token.id"), undefined);
        assert.equal(attr(point, "enduser.id"), undefined, "a person is no metric's attribute");
      }
    });

    await t.step("nothing exported holds the token's secret, an upstream key, the prompt or the answer", () => {
      for (const body of receiver.raw) {
        for (const forbidden of [secret, KEYS.TEST_ANTHROPIC_KEY, KEYS.TEST_OPENAI_KEY, PROMPT, ANSWER]) {
          assert.ok(!body.includes(forbidden), `an export holds ${forbidden.slice(0, 12)}...`);
        }
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
