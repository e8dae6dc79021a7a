/** @module What a client's JSON decoder makes of a text: every string in it, and in each string that is JSON in turn. */

/** Every string and property name in `value`, and those of each string that is itself JSON (tool arguments). */
export function decodedTexts(value: unknown): string[] {
  if (typeof value === "string") {
    try {
      return [value, ...decodedTexts(JSON.parse(value))];
    } catch {
      return [value];
    }
  }
  if (Array.isArray(value)) return value.flatMap(decodedTexts);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([key, item]) => [key, ...decodedTexts(item)]);
  }
  return [];
}
