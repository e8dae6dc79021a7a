/** @module A row of a protocol mapping table as a test case: what the client adds, and what the upstream must get. */

/** A JSON object as a test writes or reads it. */
export type Obj = Record<string, unknown>;

/** One table row: what the client adds to a plain request, and what the upstream must have got for it. */
export interface MappingRow {
  /** The row as docs/protocols.md words it; the test's name. */
  row: string;
  request: Obj;
  /** The part of the upstream's request body the row is about. */
  pick: (sent: Obj) => unknown;
  want: unknown;
}
