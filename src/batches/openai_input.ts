/**
 * @module An OpenAI batch's input file, read line by line from the deployment holding it and checked before the
 * batch is made: within `batches.max_bytes`, each line JSON with a unique `custom_id`, `method` POST, `url` the
 * batch's endpoint and a `body` whose model the group enables; then, when aliases name other ids upstream, the
 * file as the upstream must see it.
 */
import type { BatchEndpoint, CheckedRequest } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import { isObject } from "../core/types.ts";
import { badField } from "./checks.ts";
import { parseLine } from "./jsonl.ts";
import type { Native } from "./upstreams.ts";

/** The endpoints an OpenAI batch may name here. */
export const BATCH_ENDPOINTS = ["/v1/chat/completions", "/v1/responses", "/v1/embeddings"] as const;

/** Reads and checks the input file's lines; `body` is the file's content as the deployment streams it. */
export async function readInput(
  body: ReadableStream<Uint8Array>,
  endpoint: BatchEndpoint,
  maxBytes: number,
): Promise<CheckedRequest[]> {
  const requests: CheckedRequest[] = [];
  let bytes = 0;
  let rest = "";
  let number = 0;
  const take = (text: string) => {
    number++;
    if (text.trim() === "") return;
    const line = parseLine(text);
    const at = `line ${number}`;
    if (!line) throw badField(at, "is not a JSON object");
    if (typeof line.custom_id !== "string") throw badField(`${at}.custom_id`, "must be a string");
    if (line.method !== "POST") throw badField(`${at}.method`, 'must be "POST"');
    if (line.url !== endpoint) {
      throw badField(`${at}.url`, `must be the batch's endpoint ${endpoint}, not ${JSON.stringify(line.url)}`);
    }
    if (!isObject(line.body)) throw badField(`${at}.body`, "must be a request body");
    if (line.body.stream === true) throw badField(`${at}.body.stream`, "batches do not stream");
    requests.push({ custom_id: line.custom_id, endpoint, body: line.body });
  };
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) {
      await body.cancel().catch(() => {});
      throw new GatewayError(
        "request_too_large",
        `input_file_id: the file is larger than this gateway's bound of ${maxBytes} bytes (batches.max_bytes)`,
        { param: "input_file_id" },
      );
    }
    rest += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = rest.indexOf("\n")) !== -1) {
      take(rest.slice(0, end));
      rest = rest.slice(end + 1);
    }
  }
  rest += decoder.decode();
  if (rest !== "") take(rest);
  return requests;
}

/**
 * The file's lines as `native` must see them (models as its ids), or undefined when no model is renamed there and
 * the lines are not `changed` (by the group's guardrails).
 */
export function upstreamLines(
  requests: readonly CheckedRequest[],
  native: Native,
  changed = false,
): string | undefined {
  const renamed = requests.some((request) =>
    native.upstreamModels.get(request.body.model as string) !== request.body.model
  );
  if (!renamed && !changed) return undefined;
  return requests.map((request) =>
    `${
      JSON.stringify({
        custom_id: request.custom_id,
        method: "POST",
        url: request.endpoint,
        body: { ...request.body, model: native.upstreamModels.get(request.body.model as string) },
      })
    }\n`
  ).join("");
}
