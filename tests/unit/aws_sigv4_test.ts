/** @module The SigV4 signer against cases of AWS's published Signature Version 4 test suite. */
import assert from "node:assert/strict";
import {
  amzDate,
  type AwsCredentials,
  canonicalRequest,
  signAwsV4,
  type SigningRequest,
} from "../../src/providers/aws_sigv4.ts";

// The suite's fixed inputs: its example credentials, region, service and time.
const CREDENTIALS: AwsCredentials = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
};
const DATE = new Date("2015-08-30T12:36:00Z");
const HOST = ["Host", "example.amazonaws.com"] as const;
const STS_TOKEN = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIY" +
  "RqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFv" +
  "lRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iS" +
  "IlTJabIQwj2ICCR/oLxBA==";

interface Case {
  name: string;
  request: Partial<SigningRequest>;
  sessionToken?: string;
  signBody?: boolean;
  signedHeaders: string;
  signature: string;
}

// Each case is one folder of the suite: its request, the signed header list and the signature it publishes.
const CASES: Case[] = [
  {
    name: "get-vanilla",
    request: {},
    signedHeaders: "host;x-amz-date",
    signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
  },
  {
    name: "post-vanilla",
    request: { method: "POST" },
    signedHeaders: "host;x-amz-date",
    signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
  },
  {
    name: "get-vanilla-query-order-key-case",
    request: { query: "Param2=value2&Param1=value1" },
    signedHeaders: "host;x-amz-date",
    signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
  },
  {
    name: "get-vanilla-query-unreserved",
    request: {
      query: "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=" +
        "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    },
    signedHeaders: "host;x-amz-date",
    signature: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
  },
  {
    name: "get-vanilla-utf8-query",
    request: { query: "\u1234=bar" },
    signedHeaders: "host;x-amz-date",
    signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
  },
  {
    name: "get-vanilla-query-order-encoded",
    request: { query: "Param-3=Value3&Param=Value2&%E1%88%B4=Value1" },
    signedHeaders: "host;x-amz-date",
    signature: "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac",
  },
  {
    name: "post-vanilla-query",
    request: { method: "POST", query: "Param1=value1" },
    signedHeaders: "host;x-amz-date",
    signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
  },
  {
    name: "get-utf8",
    request: { path: "/\u1234" },
    signedHeaders: "host;x-amz-date",
    signature: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
  },
  {
    name: "get-unreserved",
    request: { path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" },
    signedHeaders: "host;x-amz-date",
    signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
  },
  {
    name: "get-space-normalized",
    request: { path: "/example space/" },
    signedHeaders: "host;x-amz-date",
    signature: "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
  },
  {
    name: "post-header-key-sort",
    request: { method: "POST", headers: [HOST, ["My-Header1", "value1"]] },
    signedHeaders: "host;my-header1;x-amz-date",
    signature: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
  },
  {
    name: "post-header-value-case",
    request: { method: "POST", headers: [HOST, ["My-Header1", "VALUE1"]] },
    signedHeaders: "host;my-header1;x-amz-date",
    signature: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
  },
  {
    name: "get-header-value-trim",
    request: { headers: [HOST, ["My-Header1", " value1"], ["My-Header2", ' "a   b   c"']] },
    signedHeaders: "host;my-header1;my-header2;x-amz-date",
    signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
  },
  {
    name: "get-header-key-duplicate",
    request: { headers: [HOST, ["My-Header1", "value2"], ["My-Header1", "value2"], ["My-Header1", "value1"]] },
    signedHeaders: "host;my-header1;x-amz-date",
    signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
  },
  {
    name: "get-header-value-order",
    request: {
      headers: [HOST, ...["value4", "value1", "value3", "value2"].map((v) => ["My-Header1", v] as const)],
    },
    signedHeaders: "host;my-header1;x-amz-date",
    signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
  },
  {
    name: "get-vanilla-with-session-token",
    request: {},
    sessionToken: "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
    signedHeaders: "host;x-amz-date;x-amz-security-token",
    signature: "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
  },
  {
    name: "post-sts-header-before",
    request: { method: "POST" },
    sessionToken: STS_TOKEN,
    signedHeaders: "host;x-amz-date;x-amz-security-token",
    signature: "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
  },
  {
    name: "post-x-www-form-urlencoded",
    request: {
      method: "POST",
      headers: [["Content-Type", "application/x-www-form-urlencoded"], HOST, ["Content-Length", "13"]],
      body: "Param1=value1",
    },
    signBody: true,
    signedHeaders: "content-length;content-type;host;x-amz-content-sha256;x-amz-date",
    signature: "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b",
  },
];

for (const c of CASES) {
  Deno.test(`signAwsV4() matches the published signature for ${c.name}`, async () => {
    const request: SigningRequest = { method: "GET", path: "/", query: "", headers: [HOST], body: "", ...c.request };
    const headers = await signAwsV4(request, {
      credentials: { ...CREDENTIALS, sessionToken: c.sessionToken },
      region: "us-east-1",
      service: "service",
      date: DATE,
      signBody: c.signBody,
    });
    assert.equal(
      headers.authorization,
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ` +
        `SignedHeaders=${c.signedHeaders}, Signature=${c.signature}`,
    );
    assert.equal(headers["x-amz-date"], "20150830T123600Z");
    assert.equal(headers["x-amz-security-token"], c.sessionToken);
  });
}

Deno.test("canonicalRequest() encodes a path segment once more than the wire, so a model id's ':' is %253A", async () => {
  const { text, signedHeaders } = await canonicalRequest({
    method: "post",
    path: "/model/us.anthropic.claude-v1%3A0/invoke",
    query: "",
    headers: [["Host", "bedrock-runtime.us-east-1.amazonaws.com"], ["Content-Type", "application/json"]],
    body: "{}",
  });
  const lines = text.split("\n");
  assert.equal(lines[0], "POST");
  assert.equal(lines[1], "/model/us.anthropic.claude-v1%253A0/invoke");
  assert.equal(signedHeaders, "content-type;host");
  // The last line is the SHA-256 of the body.
  assert.equal(lines.at(-1), "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
});

Deno.test("amzDate() formats the signing time without separators or milliseconds", () => {
  assert.equal(amzDate(new Date("2026-01-02T03:04:05.678Z")), "20260102T030405Z");
});
