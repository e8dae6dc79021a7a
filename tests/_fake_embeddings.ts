/**
 * @module Fake embeddings services that check what the real ones check: OpenAI's /v1/embeddings (its key as a bearer,
 * at most 2,048 inputs, no empty string, `encoding_format`, `dimensions` only for text-embedding-3 models), the Gemini
 * API's :batchEmbedContents (its key, at most 100 requests, each naming the path's model), and Bedrock's Titan v2 (one
 * `inputText`, its three dimensions) and Cohere Embed (at most 96 texts, `input_type` required, v4's dimensions). Each
 * vector is a pure function of its text and length, exactly representable as float32, so any test can predict it.
 */
import { encodeVector } from "../src/protocols/embeddings.ts";
import type { Responder } from "./_fake_upstream.ts";

type Obj = Record<string, unknown>;

/** The vector the fakes answer for a text (or a token array, by its JSON): small exact float32 values. */
export function vectorFor(input: unknown, length = 8): number[] {
  const text = typeof input === "string" ? input : JSON.stringify(input);
  let sum = 0;
  for (const char of text) sum = (sum + char.codePointAt(0)!) % 1024;
  return Array.from({ length }, (_, i) => (sum + i * 7) / 256 - 2);
}

/** The tokens the fakes count for a text: about four characters each. */
export function tokensFor(input: unknown): number {
  return Array.isArray(input) ? input.length : Math.ceil(String(input).length / 4);
}

function openAiError(status: number, message: string, param: string | null = null): Response {
  return Response.json({ error: { message, type: "invalid_request_error", param, code: null } }, { status });
}

/**
 * OpenAI's /v1/embeddings, for the key `key` as a bearer (or, with `accepts`, whatever credential it takes: Azure's
 * `api-key`, an Entra token); `calls` gets the input count of each call.
 */
export function openAiEmbeddings(
  key: string,
  calls: number[] = [],
  accepts: (headers: Headers) => boolean = (headers) => headers.get("authorization") === `Bearer ${key}`,
): Responder {
  return ({ headers, body }) => {
    if (!accepts(headers)) return openAiError(401, "Incorrect API key provided");
    if (!body || typeof body.model !== "string") return openAiError(400, "you must provide a model parameter");
    const input = body.input;
    const inputs: unknown[] = typeof input === "string"
      ? [input]
      : Array.isArray(input)
      ? (typeof input[0] === "number" ? [input] : input)
      : [];
    if (inputs.length === 0) return openAiError(400, "'input' is a required property", "input");
    if (inputs.length > 2048) return openAiError(400, "'input' : maximum 2048 items", "input");
    if (inputs.some((item) => item === "")) return openAiError(400, "'$.input' is invalid.", "input");
    const format = body.encoding_format ?? "float";
    if (format !== "float" && format !== "base64") {
      return openAiError(400, "invalid encoding_format", "encoding_format");
    }
    const dimensions = body.dimensions;
    if (dimensions !== undefined && !body.model.startsWith("text-embedding-3")) {
      return openAiError(400, "This model does not support specifying dimensions.", "dimensions");
    }
    calls.push(inputs.length);
    const tokens = inputs.reduce<number>((sum, item) => sum + tokensFor(item), 0);
    return Response.json({
      object: "list",
      data: inputs.map((item, index) => {
        const vector = vectorFor(item, typeof dimensions === "number" ? dimensions : 8);
        return { object: "embedding", index, embedding: format === "base64" ? encodeVector(vector) : vector };
      }),
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  };
}

function googleError(status: number, message: string): Response {
  const code = status === 400 ? "INVALID_ARGUMENT" : status === 403 ? "PERMISSION_DENIED" : "INTERNAL";
  return Response.json({ error: { code: status, message, status: code } }, { status });
}

/** The Gemini API's :batchEmbedContents for the key `key`; `calls` gets the request count of each call. */
export function geminiBatchEmbed(key: string, calls: number[] = []): Responder {
  return ({ headers, body, path }) => {
    if (headers.get("x-goog-api-key") !== key) {
      return googleError(403, "API key not valid. Please pass a valid API key.");
    }
    const model = /\/models\/([^/:]+):batchEmbedContents$/.exec(path)?.[1];
    const requests = body?.requests;
    if (!Array.isArray(requests) || requests.length === 0) return googleError(400, "requests is required");
    if (requests.length > 100) {
      return googleError(400, "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch");
    }
    for (const [i, request] of (requests as Obj[]).entries()) {
      if (request.model !== `models/${model}`) {
        return googleError(400, `requests[${i}].model must be the batch's model models/${model}`);
      }
      const parts = (request.content as Obj | undefined)?.parts;
      if (!Array.isArray(parts) || typeof (parts[0] as Obj)?.text !== "string") {
        return googleError(400, `requests[${i}].content is required`);
      }
    }
    calls.push(requests.length);
    return Response.json({
      embeddings: (requests as Obj[]).map((request) => {
        const text = ((request.content as Obj).parts as Obj[]).map((part) => part.text).join("\n");
        const length = typeof request.outputDimensionality === "number" ? request.outputDimensionality : 8;
        return { values: vectorFor(text, length) };
      }),
    });
  };
}

function bedrockValidation(message: string): Response {
  return Response.json({ message }, {
    status: 400,
    headers: { "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/" },
  });
}

/** True for a model id the Bedrock fake answers as an embedding model. */
export function isBedrockEmbedding(model: string): boolean {
  return /(^|\.)(amazon\.titan-embed|cohere\.embed)/.test(model);
}

/** Bedrock's InvokeModel for Titan Text Embeddings v2 and Cohere Embed v3 and v4; `calls` gets each call's texts. */
export function bedrockEmbedding(model: string, body: Obj, calls: number[] = []): Response {
  if (model.includes("titan-embed")) {
    const allowed = Object.keys(body).filter((key) =>
      !["inputText", "dimensions", "normalize", "embeddingTypes"].includes(key)
    );
    if (allowed.length > 0) return bedrockValidation(`extraneous key [${allowed[0]}] is not permitted`);
    if (typeof body.inputText !== "string" || body.inputText === "") {
      return bedrockValidation("Malformed input request: #/inputText: expected minLength: 1");
    }
    const dimensions = body.dimensions ?? 1024;
    if (![256, 512, 1024].includes(dimensions as number)) {
      return bedrockValidation("Malformed input request: #/dimensions: 64 is not a valid enum value");
    }
    calls.push(1);
    return Response.json({
      embedding: vectorFor(body.inputText, dimensions as number),
      inputTextTokenCount: tokensFor(body.inputText),
    });
  }
  const texts = body.texts;
  if (!Array.isArray(texts) || texts.length === 0) return bedrockValidation("Malformed input request: #/texts");
  if (texts.length > 96) return bedrockValidation("Malformed input request: #/texts: expected maxItems: 96");
  if (typeof body.input_type !== "string") {
    return bedrockValidation("Malformed input request: #: required key [input_type] not found");
  }
  const v4 = model.includes("embed-v4");
  if (
    body.output_dimension !== undefined && (!v4 || ![256, 512, 1024, 1536].includes(body.output_dimension as number))
  ) {
    return bedrockValidation("Malformed input request: #/output_dimension");
  }
  calls.push(texts.length);
  const length = typeof body.output_dimension === "number" ? body.output_dimension : 8;
  const vectors = texts.map((text) => vectorFor(text, length));
  const byType = Array.isArray(body.embedding_types);
  const tokens = texts.reduce((sum, text) => sum + tokensFor(text), 0);
  return Response.json(
    {
      id: crypto.randomUUID(),
      texts,
      embeddings: byType ? { float: vectors } : vectors,
      response_type: byType ? "embeddings_by_type" : "embeddings_floats",
    },
    { headers: { "x-amzn-bedrock-input-token-count": String(tokens) } },
  );
}

/** Vertex AI's `:predict` for Google's embedding models: gemini-embedding takes one instance a call, others 250. */
export function vertexPredictEmbed(calls: number[] = []): Responder {
  return ({ path, body }) => {
    const model = /\/models\/([^/:]+):predict$/.exec(path)?.[1] ?? "";
    const instances = body?.instances;
    const most = model.startsWith("gemini-embedding") ? 1 : 250;
    if (!Array.isArray(instances) || instances.length === 0) return googleError(400, "instances is required");
    if (instances.length > most) {
      return googleError(400, `Unable to submit request because the model supports up to ${most} instances`);
    }
    if (instances.some((one) => typeof (one as Obj).content !== "string")) {
      return googleError(400, "instances[].content is required");
    }
    calls.push(instances.length);
    const parameters = (body?.parameters ?? {}) as Obj;
    const length = typeof parameters.outputDimensionality === "number" ? parameters.outputDimensionality : 8;
    return Response.json({
      predictions: (instances as Obj[]).map((one) => ({
        embeddings: {
          values: vectorFor(one.content, length),
          statistics: { truncated: false, token_count: tokensFor(one.content) },
        },
      })),
    });
  };
}
