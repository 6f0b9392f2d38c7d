/**
 * Prefixed, time-sortable identifiers (`job_01J...`): 48-bit millisecond timestamp then 80
 * random bits, Crockford base32, so ids sort by creation time and never collide in practice.
 */
import { toBase64Url } from "./base64";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export type IdPrefix =
  | "acct"
  | "key"
  | "upl"
  | "job"
  | "led"
  | "dl"
  | "mail"
  | "brd"
  | "chn"
  | "pst"
  | "apl"
  | "rev"
  | "dlv"
  | "ul"
  | "msg"
  | "conn"
  | "tpl"
  | "cmt";

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const random = crypto.getRandomValues(new Uint8Array(16));
  let rand = "";
  for (const byte of random) rand += ALPHABET[byte % 32];
  return `${prefix}_${time}${rand}`;
}

/** A capability token: `bytes` random bytes as base64url (default 24 bytes = 192 bits). */
export function randomToken(bytes = 24): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return toBase64Url(raw);
}

/** An id the caller sent, as an error message may quote it: whole up to 64 characters, else a short prefix. */
export const quotedId = (id: string): string => (id.length > 64 ? `${id.slice(0, 32)}…` : id);
