/**
 * @module Sealing what the gateway hands a client to bring back later (a compaction's summary): AES-256-GCM under a
 * key derived from the gateway's compaction key, with the token it was made for as associated data, so a sealed
 * value is opaque, a changed one does not open, and another token's does not open either.
 */
import { createHmac } from "node:crypto";

/** Seals and opens values bound to a token. */
export interface Sealer {
  /** `plaintext` sealed for `token`: a string the client may keep and send back. */
  seal(token: string, plaintext: string): Promise<string>;
  /** The plaintext, or undefined when `sealed` was changed, made for another token, or made under another key. */
  open(token: string, sealed: string): Promise<string | undefined>;
  /**
   * A guardrail placeholder's 6 hex digits for `text`: an HMAC under a key derived from the same secret, so the same
   * match gives the same placeholder on every turn, and a new compaction key gives new ones.
   */
  tag(text: string): string;
}

/** What every value this gateway seals starts with; a value without it was made elsewhere. */
export const SEALED_PREFIX = "mgc1.";
/** The environment variable that holds the compaction key. */
export const COMPACTION_KEY_ENV = "MODELGATE_COMPACTION_KEY";
/** The shortest compaction key accepted: a shorter one is a guessable key. */
export const COMPACTION_KEY_MIN_CHARS = 32;

const IV_BYTES = 12;
const encoder = new TextEncoder();

/** A sealer whose AES key is derived (HKDF-SHA-256) from `secret`; the derivation runs once, on first use. */
export function createSealer(secret: Uint8Array): Sealer {
  let key: Promise<CryptoKey> | undefined;
  const aesKey = () => key ??= deriveKey(secret);
  const bound = (token: string) => encoder.encode(`modelgate compaction v1\u0000${token}`);
  // Synchronous, as a stream masks text as it passes; its own key, so a tag says nothing of the sealing key.
  const tagKey = createHmac("sha256", secret).update("modelgate guardrail placeholder v1").digest();
  return {
    tag: (text) => createHmac("sha256", tagKey).update(text).digest("hex").slice(0, 6),
    async seal(token, plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const data = encoder.encode(plaintext);
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: bound(token) },
        await aesKey(),
        data,
      );
      const out = new Uint8Array(IV_BYTES + sealed.byteLength);
      out.set(iv);
      out.set(new Uint8Array(sealed), IV_BYTES);
      return SEALED_PREFIX + toBase64Url(out);
    },
    async open(token, sealed) {
      if (!sealed.startsWith(SEALED_PREFIX)) return undefined;
      const bytes = fromBase64Url(sealed.slice(SEALED_PREFIX.length));
      if (!bytes || bytes.byteLength <= IV_BYTES + 16) return undefined;
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: bytes.slice(0, IV_BYTES), additionalData: bound(token) },
          await aesKey(),
          bytes.slice(IV_BYTES),
        );
        return new TextDecoder("utf-8", { fatal: true }).decode(plain);
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The sealer for the process: from the compaction key in the environment, or from a random key when none is set (its
 * items then open only in this process, until it stops). A key shorter than the minimum refuses to start.
 */
export function sealerFromEnv(env: (name: string) => string | undefined): { sealer: Sealer; fromEnv: boolean } {
  const value = env(COMPACTION_KEY_ENV);
  if (value === undefined || value === "") {
    return { sealer: createSealer(crypto.getRandomValues(new Uint8Array(32))), fromEnv: false };
  }
  if (value.length < COMPACTION_KEY_MIN_CHARS) {
    throw new Error(
      `Cannot use ${COMPACTION_KEY_ENV}: it has ${value.length} characters, at least ${COMPACTION_KEY_MIN_CHARS} are ` +
        `needed (for example the output of "openssl rand -base64 32")`,
    );
  }
  return { sealer: createSealer(encoder.encode(value)), fromEnv: true };
}

async function deriveKey(secret: Uint8Array): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, "HKDF", false, ["deriveKey"]);
  return await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("modelgate compaction seal") },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

function toBase64Url(bytes: Uint8Array): string {
  return bytes.toBase64({ alphabet: "base64url", omitPadding: true });
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    return Uint8Array.fromBase64(text, { alphabet: "base64url" });
  } catch {
    return undefined;
  }
}
