/**
 * @module AWS Signature Version 4 for one request (headers, not query signing): the canonical request, the
 * string to sign and the Authorization header, computed with WebCrypto's SHA-256 and HMAC-SHA256.
 */

/** The AWS credentials a request is signed with. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Present with temporary credentials; sent (and signed) as `x-amz-security-token`. */
  sessionToken?: string;
}

/** The parts of a request that the signature covers, as they go over the wire. */
export interface SigningRequest {
  method: string;
  /** The path as sent, already percent-encoded once; every segment is encoded again for the signature. */
  path: string;
  /** The query string without `?` ("" for none). */
  query: string;
  /** Every header to sign, `host` included; a name may repeat. */
  headers: ReadonlyArray<readonly [string, string]>;
  body: Uint8Array | string;
}

/** Who signs, for which service and region, and when. */
export interface SigningScope {
  credentials: AwsCredentials;
  region: string;
  service: string;
  date: Date;
  /** Also send and sign `x-amz-content-sha256` (S3 needs it; other services accept it). */
  signBody?: boolean;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
const encoder = new TextEncoder();

/** `20150830T123600Z`: the form of `x-amz-date`. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/** RFC 3986 encoding as SigV4 wants it: every byte but A-Z a-z 0-9 - _ . ~ is %XX (uppercase). */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Each path segment encoded once more than on the wire, as services other than S3 expect. */
function canonicalPath(path: string): string {
  return path === "" ? "/" : path.split("/").map(uriEncode).join("/");
}

/** Decodes a query component, leaving a malformed escape as it is. */
function decodeQueryPart(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Query parameters decoded, encoded the SigV4 way, and sorted by name, then value. */
function canonicalQuery(query: string): string {
  if (query === "") return "";
  const pairs = query.split("&").filter((part) => part !== "").map((part) => {
    const at = part.indexOf("=");
    const name = at === -1 ? part : part.slice(0, at);
    const value = at === -1 ? "" : part.slice(at + 1);
    return [uriEncode(decodeQueryPart(name)), uriEncode(decodeQueryPart(value))] as const;
  });
  pairs.sort(([an, av], [bn, bv]) => an < bn ? -1 : an > bn ? 1 : av < bv ? -1 : av > bv ? 1 : 0);
  return pairs.map(([name, value]) => `${name}=${value}`).join("&");
}

/** Lower-case names, sorted; values trimmed with inner runs of spaces folded; repeated names joined by commas. */
function canonicalHeaders(headers: SigningRequest["headers"]): { text: string; signed: string } {
  const byName = new Map<string, string[]>();
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    const folded = value.trim().replace(/\s+/g, " ");
    byName.set(key, [...(byName.get(key) ?? []), folded]);
  }
  const names = [...byName.keys()].sort();
  return {
    text: names.map((name) => `${name}:${byName.get(name)!.join(",")}\n`).join(""),
    signed: names.join(";"),
  };
}

async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).toHex();
}

async function hmac(key: Uint8Array, data: string): Promise<Uint8Array> {
  const imported = await crypto.subtle.importKey(
    "raw",
    key as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(data)));
}

/** The canonical request and the names of the signed headers; exported so a verifier can rebuild them. */
export async function canonicalRequest(request: SigningRequest): Promise<{ text: string; signedHeaders: string }> {
  const headers = canonicalHeaders(request.headers);
  const text = [
    request.method.toUpperCase(),
    canonicalPath(request.path),
    canonicalQuery(request.query),
    headers.text,
    headers.signed,
    await sha256Hex(request.body),
  ].join("\n");
  return { text, signedHeaders: headers.signed };
}

/** The hex signature of a canonical request for a scope; exported so a verifier can recompute it. */
export async function signatureOf(
  canonical: string,
  scope: Omit<SigningScope, "signBody">,
): Promise<{ signature: string; credentialScope: string }> {
  const stamp = amzDate(scope.date);
  const day = stamp.slice(0, 8);
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = [ALGORITHM, stamp, credentialScope, await sha256Hex(canonical)].join("\n");
  let key = await hmac(encoder.encode(`AWS4${scope.credentials.secretAccessKey}`), day);
  for (const part of [scope.region, scope.service, "aws4_request"]) key = await hmac(key, part);
  return { signature: (await hmac(key, stringToSign)).toHex(), credentialScope };
}

/**
 * The headers that sign `request`: `x-amz-date`, `x-amz-security-token` with temporary credentials,
 * `x-amz-content-sha256` when asked, and `authorization`. Every one of them must be sent as returned.
 */
export async function signAwsV4(request: SigningRequest, scope: SigningScope): Promise<Record<string, string>> {
  const added: Record<string, string> = { "x-amz-date": amzDate(scope.date) };
  if (scope.credentials.sessionToken) added["x-amz-security-token"] = scope.credentials.sessionToken;
  if (scope.signBody) added["x-amz-content-sha256"] = await sha256Hex(request.body);
  const canonical = await canonicalRequest({ ...request, headers: [...request.headers, ...Object.entries(added)] });
  const { signature, credentialScope } = await signatureOf(canonical.text, scope);
  added.authorization = `${ALGORITHM} Credential=${scope.credentials.accessKeyId}/${credentialScope}, ` +
    `SignedHeaders=${canonical.signedHeaders}, Signature=${signature}`;
  return added;
}
