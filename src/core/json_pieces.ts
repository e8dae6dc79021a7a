/**
 * @module A JSON value written out in pieces of bounded size, the text JSON.stringify would give made a piece at a
 * time: a value that holds a long string (a large answer's text) is sent without its whole JSON ever being one string.
 */

/** True when the strings and property names in `value` add up to more than `limit` characters. */
export function holdsMoreThan(value: unknown, limit: number): boolean {
  let total = 0;
  const visit = (v: unknown): boolean => {
    if (typeof v === "string") return (total += v.length) > limit;
    if (Array.isArray(v)) return v.some(visit);
    if (v === null || typeof v !== "object") return false;
    for (const [key, item] of Object.entries(v)) if ((total += key.length) > limit || visit(item)) return true;
    return false;
  };
  return visit(value);
}

/** Where a long string may be cut: never between the two halves of a surrogate pair. */
function cutAt(text: string, end: number): number {
  if (end >= text.length) return text.length;
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}

/**
 * `value` as JSON text in pieces of about `size` characters (a piece may run past it by one short value), each
 * string first passed through `text` (the caller's redaction). Joined, the pieces are JSON.stringify's text for
 * plain JSON values: objects, arrays, strings, finite numbers, booleans and null (undefined members are left out).
 */
export function* jsonPieces(
  value: unknown,
  size: number,
  text: (value: string) => string = (value) => value,
): Generator<string> {
  let piece = "";
  function* write(v: unknown): Generator<string> {
    if (typeof v === "string") {
      const s = text(v);
      if (s.length <= size) {
        piece += JSON.stringify(s);
      } else {
        piece += '"';
        for (let at = 0; at < s.length;) {
          const end = cutAt(s, at + size);
          piece += JSON.stringify(s.slice(at, end)).slice(1, -1);
          at = end;
          yield piece;
          piece = "";
        }
        piece += '"';
      }
    } else if (Array.isArray(v)) {
      piece += "[";
      for (let i = 0; i < v.length; i++) {
        if (i > 0) piece += ",";
        yield* write(v[i] === undefined ? null : v[i]);
      }
      piece += "]";
    } else if (v !== null && typeof v === "object") {
      piece += "{";
      let first = true;
      for (const [key, item] of Object.entries(v)) {
        if (item === undefined) continue;
        piece += `${first ? "" : ","}${JSON.stringify(text(key))}:`;
        first = false;
        yield* write(item);
      }
      piece += "}";
    } else {
      piece += JSON.stringify(v) ?? "null";
    }
    if (piece.length >= size) {
      yield piece;
      piece = "";
    }
  }
  yield* write(value);
  if (piece !== "") yield piece;
}
