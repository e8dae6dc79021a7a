/**
 * @module The size in bytes of a value's JSON as `JSON.stringify` writes it in UTF-8, counted piece by piece so a
 * stored conversation of many megabytes is measured without making it a string.
 */
import { jsonPieces } from "../providers/upload.ts";

/** UTF-8 bytes of `text`; JSON text has no lone surrogates (`JSON.stringify` escapes them). */
function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      // A surrogate pair: two units, four bytes.
      bytes += 2;
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** The bytes of `JSON.stringify(value)` in UTF-8. */
export function jsonBytes(value: unknown): number {
  let bytes = 0;
  for (const piece of jsonPieces(value)) bytes += utf8Length(piece);
  return bytes;
}
