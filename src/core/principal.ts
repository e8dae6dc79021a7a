/** @module Who is calling: a client token as stored, its group, and the pair a request runs as. */
import type { GroupConfig, Limits } from "./config.ts";

/** A token as stored; the secret itself is never kept. */
export interface TokenRecord {
  id: string;
  name: string;
  group: string;
  created_at: string;
  expires_at: string | null;
  disabled: boolean;
  /** Caps on this token alone; absent when it has none. */
  limits?: Limits;
  /** The person the token belongs to (a signed-in person's email); absent for tokens made by an operator for others. */
  owner?: string;
}

/** A group as stored: the models it enables and its listing shape. */
export type Group = GroupConfig;

/** Who is calling: the token record and the group that decides its models. */
export interface Principal {
  token: TokenRecord;
  group: Group;
}
