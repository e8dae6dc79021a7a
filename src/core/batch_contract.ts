/**
 * @module What the batch and file endpoints share across layers: the record each handed-out id maps to, the
 * requests of a checked batch, and the interface of the batches the gateway runs itself.
 */
import type { Principal } from "./principal.ts";

/** What an id names. */
export type IdKind = "batch" | "file";
/** The API a batch or file was made through. */
export type BatchProtocol = "anthropic" | "openai";

/** Where one handed-out id lives and whose it is. */
export interface IdRecord {
  kind: IdKind;
  protocol: BatchProtocol;
  /** The id the gateway handed out. */
  id: string;
  /** The token id that made it: the only caller that may see it. */
  owner: string;
  /** The upstream holding it; null when the gateway holds it itself. */
  upstream: string | null;
  /** The provider's own id; null when the gateway holds it. */
  upstream_id: string | null;
  /** Milliseconds since the epoch. */
  created_at: number;
  /** The public model ids a batch names. */
  models?: string[];
  /** The person the owning token belongs to, and its group, for operators. */
  owner_email?: string;
  group?: string;
  /** An OpenAI file's purpose. */
  purpose?: string;
  /** The object as last seen (a file's metadata, a batch's state), so a listing needs no call per entry. */
  object?: Record<string, unknown>;
  /** An OpenAI batch's input file as the client named it (the upstream may hold a copy with its own model ids). */
  input_file_id?: string;
  /** Set once a batch's results have been counted in usage and spend, so they are counted once. */
  settled?: boolean;
}

/** The endpoints a batch's requests may name. */
export type BatchEndpoint = "/v1/messages" | "/v1/chat/completions" | "/v1/responses" | "/v1/embeddings";

/** One request of a batch, already checked (its custom_id unique, its model one the group enables). */
export interface CheckedRequest {
  custom_id: string;
  endpoint: BatchEndpoint;
  /** The body as the client wrote it: its `model` is the client's public model id. */
  body: Record<string, unknown>;
}

/** A batch for the gateway to run, handed over once every check has passed. */
export interface GatewayBatchCreate {
  protocol: BatchProtocol;
  caller: Principal;
  requestId: string;
  requests: CheckedRequest[];
  /** An OpenAI batch's own fields, as the client sent them. */
  openai?: {
    input_file_id: string;
    endpoint: string;
    completion_window: string;
    metadata: Record<string, string> | null;
  };
}

/** The batches the gateway runs itself (for models no single provider batch API serves). */
export interface GatewayBatchRunner {
  /** Registers the batch and answers it in the protocol's shape. */
  create(input: GatewayBatchCreate): Promise<Record<string, unknown>>;
  /** The batch in the protocol's shape; `baseUrl` is the gateway's own, for Anthropic's results_url. */
  retrieve(record: IdRecord, baseUrl: string): Promise<Record<string, unknown>>;
  cancel(record: IdRecord, baseUrl: string): Promise<Record<string, unknown>>;
  /** Results (Anthropic) or an output/error file's content (OpenAI): JSONL, one line each, no blank line. */
  results(record: IdRecord): Promise<ReadableStream<Uint8Array>>;
  /** Anthropic's delete, once the batch has ended. */
  delete(record: IdRecord): Promise<Record<string, unknown>>;
  /** An OpenAI file object for a file the gateway holds (a batch's output or error file). */
  file?(record: IdRecord): Promise<Record<string, unknown>>;
}
