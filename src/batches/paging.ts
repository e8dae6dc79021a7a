/**
 * @module Listings of a caller's own files and batches, paged as each provider pages them: Anthropic's
 * `before_id`/`after_id`/`limit`, OpenAI's `after`/`limit`. Entries come newest first.
 */
import { invalidField } from "../core/validation.ts";

/** A count parameter in [1, max], `fallback` when absent. */
export function limitParam(query: URLSearchParams, max: number, fallback: number): number {
  const raw = query.get("limit");
  if (raw === null) return fallback;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || limit < 1 || limit > max) {
    throw invalidField("limit", `must be an integer from 1 to ${max}`);
  }
  return limit;
}

/** One page in Anthropic's shape. */
export function anthropicPage<T extends { id: string }>(items: readonly T[], query: URLSearchParams) {
  const limit = limitParam(query, 1000, 20);
  const afterId = query.get("after_id");
  const beforeId = query.get("before_id");
  if (afterId !== null && beforeId !== null) throw invalidField("before_id", "cannot be combined with after_id");
  let start = 0;
  let end = Math.min(items.length, limit);
  // An id the caller does not own is as unknown as one that never existed: the page after it is empty.
  if (afterId !== null) {
    const at = items.findIndex((item) => item.id === afterId);
    start = at === -1 ? items.length : at + 1;
    end = Math.min(items.length, start + limit);
  } else if (beforeId !== null) {
    const at = items.findIndex((item) => item.id === beforeId);
    end = at === -1 ? 0 : at;
    start = Math.max(0, end - limit);
  }
  const data = items.slice(start, end);
  const hasMore = beforeId !== null ? start > 0 : end < items.length;
  return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

/** One page in OpenAI's list shape, after the `after` cursor. */
export function openaiPage<T extends { id: string }>(
  items: readonly T[],
  query: URLSearchParams,
  max: number,
  fallback: number,
) {
  const limit = limitParam(query, max, fallback);
  const after = query.get("after");
  const at = after === null ? -1 : items.findIndex((item) => item.id === after);
  const start = after === null ? 0 : at === -1 ? items.length : at + 1;
  const data = items.slice(start, start + limit);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + limit < items.length,
  };
}
