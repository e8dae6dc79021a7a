/**
 * @module The guardrails' built-in detectors: for each kind of secret and personal data, a pattern anchored on what
 * the format fixes (a key's prefix and length, a PEM block, a JWT's JSON header), a check of what a pattern cannot say
 * (Luhn for cards, the IBAN checksum, look-alike placeholders), and what a stream must hold back for it: the
 * characters a match is made of, its fixed beginnings and its longest length (see docs/guardrails.md).
 */
import { cardNumberOk, ibanChecksumOk, ibanLength, jwtOk, ssnOk } from "./detector_checks.ts";

/** One kind of text to find. */
export interface Detector {
  kind: string;
  /** Global; a match is a candidate, which `accept` may refuse or shorten. */
  pattern: RegExp;
  /** How many characters of a candidate are a real match (0: none); absent, all of them. */
  accept?(match: string): number;
  /** The only ways a match can begin; absent when any character of `body` may begin one. */
  starts?: readonly string[];
  /** The characters a match is made of (one character each); absent for a custom pattern, which may match anything. */
  body?: RegExp;
  /** The characters a match may begin with, when `starts` does not say and fewer than `body` may. */
  first?: RegExp;
  /**
   * The characters that may not come just before a match (it would be part of a longer word or number): checked on
   * the candidate's place, which is cheaper than a look-behind at the head of the pattern.
   */
  notAfter?: RegExp;
  /** The most characters a match takes: a stream never holds back more than this. */
  max: number;
  /**
   * A character every match holds, and how far a match reaches before and after it: the pattern is then run only
   * around each one (an address's `@`), not from every position of a long text.
   */
  around?: { anchor: string; before: number; after: number };
}

/** A run of one character six times or more: a placeholder (`ghp_xxxxxx…`), never a generated key. */
const PLACEHOLDER_RUN = /(.)\1{5}/;
/** A key's candidate is refused when it is an obvious placeholder or a documented example. */
function notPlaceholder(match: string): number {
  return PLACEHOLDER_RUN.test(match) || /EXAMPLE/.test(match) ? 0 : match.length;
}

/** A word of letters, digits, `_` and `-` before or after a token: the token is part of a longer word, so not one. */
const NOT_AFTER = "(?<![A-Za-z0-9_-])";
const NOT_BEFORE = "(?![A-Za-z0-9_-])";

/** Lengths a PEM block may run to: a 16384-bit RSA key is under 13,000 characters. */
const PEM_MAX = 16_384;
/** File extensions that end a name like `logo@2x.png`, which reads like an address and is not one. */
const FILE_EXTENSIONS = new Set(["png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "css", "js", "ts", "json", "md"]);

function email(match: string): number {
  const at = match.indexOf("@");
  const tld = match.slice(match.lastIndexOf(".") + 1).toLowerCase();
  // `git@github.com:owner/repo` is an SSH remote, not someone's address.
  if (FILE_EXTENSIONS.has(tld) || match.slice(0, at) === "git") return 0;
  return match.length;
}

function phone(match: string): number {
  const digits = match.replace(/\D/g, "").length;
  return digits >= 8 && digits <= 15 ? match.length : 0;
}

/** An IBAN candidate may run into the next word of capitals; the country's length says where it ends. */
function iban(match: string): number {
  const length = ibanLength(match.slice(0, 2));
  if (length === undefined) return 0;
  let count = 0;
  let end = 0;
  while (end < match.length && count < length) {
    if (match[end] !== " ") count++;
    end++;
  }
  if (count < length || /[A-Z0-9]/.test(match[end] ?? "")) return 0;
  return ibanChecksumOk(match.slice(0, end)) ? end : 0;
}

/** The built-in detectors, by kind. */
export const DETECTORS: Record<string, Detector> = {
  aws_access_key: {
    kind: "aws_access_key",
    pattern: /(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])/g,
    accept: notPlaceholder,
    starts: ["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
    body: /[A-Z0-9]/,
    max: 20,
  },
  github_token: {
    kind: "github_token",
    pattern: new RegExp(`${NOT_AFTER}(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})${NOT_BEFORE}`, "g"),
    accept: notPlaceholder,
    starts: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    body: /[A-Za-z0-9_]/,
    max: 93,
  },
  slack_token: {
    kind: "slack_token",
    pattern: new RegExp(
      `${NOT_AFTER}(?:xoxb-\\d{10,13}-\\d{10,13}(?:-[A-Za-z0-9]{1,64}){0,3}|xox[pe](?:-\\d{10,13}){3}-[A-Za-z0-9]{28,34}` +
        `|xox[os]-\\d{1,20}-\\d{1,20}-\\d{1,20}-[a-fA-F0-9]{8,64}|xapp-\\d-[A-Z0-9]{1,20}-\\d{1,20}-[a-z0-9]{32,80})` +
        NOT_BEFORE,
      "g",
    ),
    accept: notPlaceholder,
    starts: ["xoxb-", "xoxp-", "xoxe-", "xoxo-", "xoxs-", "xapp-"],
    body: /[A-Za-z0-9-]/,
    max: 230,
  },
  google_api_key: {
    kind: "google_api_key",
    pattern: new RegExp(`${NOT_AFTER}AIza[0-9A-Za-z_-]{35}${NOT_BEFORE}`, "g"),
    accept: notPlaceholder,
    starts: ["AIza"],
    body: /[A-Za-z0-9_-]/,
    max: 39,
  },
  openai_key: {
    kind: "openai_key",
    pattern: new RegExp(
      `${NOT_AFTER}sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{58,74}T3BlbkFJ[A-Za-z0-9_-]{58,74}` +
        `|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})${NOT_BEFORE}`,
      "g",
    ),
    accept: notPlaceholder,
    starts: ["sk-"],
    body: /[A-Za-z0-9_-]/,
    max: 168,
  },
  anthropic_key: {
    kind: "anthropic_key",
    pattern: new RegExp(`${NOT_AFTER}sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{93}AA${NOT_BEFORE}`, "g"),
    accept: notPlaceholder,
    starts: ["sk-ant-"],
    body: /[A-Za-z0-9_-]/,
    max: 110,
  },
  stripe_key: {
    kind: "stripe_key",
    pattern: /(?<![A-Za-z0-9_])(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}(?![A-Za-z0-9])/g,
    accept: notPlaceholder,
    starts: ["sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_"],
    body: /[A-Za-z0-9_]/,
    max: 107,
  },
  private_key: {
    kind: "private_key",
    // The block's line breaks may be real or written `\n` (a key inside a JSON string, a tool call's arguments).
    pattern:
      /-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]{64,16000}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----/g,
    starts: ["-----BEGIN"],
    body: /[A-Za-z0-9+/= \t\r\n:,._\\-]/,
    max: PEM_MAX,
  },
  jwt: {
    kind: "jwt",
    pattern:
      /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,4000}\.eyJ[A-Za-z0-9_-]{2,4000}\.[A-Za-z0-9_-]{0,1000}(?![A-Za-z0-9_.-])/g,
    accept: (match) => jwtOk(match) ? match.length : 0,
    starts: ["eyJ"],
    body: /[A-Za-z0-9_.-]/,
    max: 9004,
  },
  email: {
    kind: "email",
    pattern:
      /(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-]|\.[A-Za-z0-9])/g,
    accept: email,
    around: { anchor: "@", before: 64, after: 254 },
    body: /[A-Za-z0-9._%+@-]/,
    first: /[A-Za-z0-9]/,
    max: 254,
  },
  phone: {
    kind: "phone",
    // E.164 with its `+`: a number without one cannot be told from any other number.
    pattern: /(?<![A-Za-z0-9_+])\+[1-9](?:[ .-]?\(?\d\)?){6,14}(?![\d])/g,
    accept: phone,
    starts: ["+"],
    body: /[0-9+ ().-]/,
    max: 40,
  },
  card: {
    kind: "card",
    pattern: /\d(?:[ -]?\d){12,18}(?!\d|\.\d)/g,
    notAfter: /[\d.-]/,
    accept: (match) => cardNumberOk(match) ? match.length : 0,
    body: /[0-9 -]/,
    first: /[0-9]/,
    max: 37,
  },
  iban: {
    kind: "iban",
    pattern: /[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}/g,
    notAfter: /[A-Za-z0-9]/,
    accept: iban,
    body: /[A-Z0-9 ]/,
    first: /[A-Z]/,
    max: 42,
  },
  us_ssn: {
    kind: "us_ssn",
    // Only the written form: nine digits alone are any number.
    pattern: /\d{3}-\d{2}-\d{4}(?![\d-])/g,
    notAfter: /[\d-]/,
    accept: (match) => ssnOk(match) ? match.length : 0,
    body: /[0-9-]/,
    first: /[0-9]/,
    max: 11,
  },
};

/** The groups of kinds a rule's `detect` may name. */
export const KIND_GROUPS: Record<string, readonly string[]> = {
  secrets: [
    "aws_access_key",
    "github_token",
    "slack_token",
    "google_api_key",
    "openai_key",
    "anthropic_key",
    "stripe_key",
    "private_key",
    "jwt",
  ],
  pii: ["email", "phone", "card", "iban", "us_ssn"],
};

/** The longest match a custom pattern is held back for in a stream, unless its rule says otherwise. */
export const CUSTOM_MAX = 256;

/** A detector for a rule's own `{regex, kind}`; throws a SyntaxError for a pattern that does not compile. */
export function customDetector(regex: string, kind: string, max = CUSTOM_MAX): Detector {
  return { kind, pattern: new RegExp(regex, "g"), max };
}

/** What a placeholder looks like, for restoring one in a model's answer. */
export const PLACEHOLDER: Detector = {
  kind: "placeholder",
  pattern: /\[REDACTED:[a-z0-9_]{1,40}:[0-9a-f]{6}\]/g,
  starts: ["[REDACTED:"],
  body: /[A-Za-z0-9_:[\]]/,
  max: 58,
};
