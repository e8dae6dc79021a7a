/**
 * @module What a detector's pattern cannot say about a candidate: a card number's Luhn digit and issuer prefix
 * (ISO/IEC 7812), an IBAN's length for its country and its MOD 97-10 check digits (ISO 13616), a JWT's JSON header
 * and payload (RFC 7519), and the US social security numbers that are never issued.
 */

/** True when the digits pass the Luhn check: from the right, every second digit doubled (less 9 past 9), sum ≡ 0 mod 10. */
export function luhnOk(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** The card lengths each issuer prefix is used with, by the prefix's first digits (a range for Mastercard and JCB). */
function issuerLengths(digits: string): readonly number[] {
  const two = Number(digits.slice(0, 2));
  const three = Number(digits.slice(0, 3));
  const four = Number(digits.slice(0, 4));
  if (digits[0] === "4") return [13, 16, 19];
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return [16];
  if (two === 34 || two === 37) return [15];
  if (four === 6011 || two === 65 || (three >= 644 && three <= 649)) return [16, 17, 18, 19];
  if (four >= 3528 && four <= 3589) return [16, 17, 18, 19];
  if (two === 36 || two === 38 || (three >= 300 && three <= 305)) return [14, 16];
  if (two === 62) return [16, 17, 18, 19];
  return [];
}

/** True for a card number: one kind of separator at most, a known issuer's length, and the Luhn check. */
export function cardNumberOk(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, "");
  // The issuer first: most long numbers in code (timestamps, ids) fail it at once.
  if (!issuerLengths(digits).includes(digits.length) || !luhnOk(digits)) return false;
  const separators = new Set(candidate.replace(/\d/g, ""));
  // A number of one repeated digit (0000 0000 …) passes Luhn and is a fixture's filler, never a card.
  return separators.size <= 1 && !/^(\d)\1+$/.test(digits);
}

/** IBAN lengths by country (ISO 13616 registry), for the countries that issue them. */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
};

/** The length of an IBAN of `country`, or undefined for a country that has none. */
export function ibanLength(country: string): number | undefined {
  return IBAN_LENGTHS[country];
}

/** True when an IBAN's check digits hold: the first four characters moved to the end, letters as 10–35, mod 97 is 1. */
export function ibanChecksumOk(candidate: string): boolean {
  const compact = candidate.replaceAll(" ", "");
  const moved = compact.slice(4) + compact.slice(0, 4);
  let rest = 0;
  for (const char of moved) {
    const value = char >= "A" ? char.charCodeAt(0) - 55 : char.charCodeAt(0) - 48;
    rest = (value > 9 ? rest * 100 + value : rest * 10 + value) % 97;
  }
  return rest === 1;
}

/** The JSON object a base64url segment holds, or undefined. */
function segmentObject(segment: string): Record<string, unknown> | undefined {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.fromBase64(segment, { alphabet: "base64url" }),
    );
    const value = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** True for a compact JWS: a header that is a JSON object naming its `alg`, and a payload that is a JSON object. */
export function jwtOk(candidate: string): boolean {
  const [header, payload] = candidate.split(".");
  const head = segmentObject(header);
  return typeof head?.alg === "string" && segmentObject(payload) !== undefined;
}

/** Numbers the Social Security Administration never issues, and the two it published as examples. */
const SSN_EXAMPLES = new Set(["078-05-1120", "219-09-9999", "123-45-6789"]);

/** True for a social security number that can be issued: area not 000, 666 or 9xx, group not 00, serial not 0000. */
export function ssnOk(candidate: string): boolean {
  const [area, group, serial] = candidate.split("-");
  if (area === "000" || area === "666" || area[0] === "9" || group === "00" || serial === "0000") return false;
  return !SSN_EXAMPLES.has(candidate);
}
