/** Display helpers for the developer area (UTC dates: the ledger and usage are in UTC days). */
import { displayName } from "../lib/display-name";

export const credits = (n: number) => n.toLocaleString("en-US");
export const signedCredits = (n: number) => (n > 0 ? `+${credits(n)}` : credits(n));
export const euros = (cents: number | null, currency = "eur") =>
  cents === null
    ? ""
    : `${(cents / 100).toLocaleString("en-US", { minimumFractionDigits: cents % 100 ? 2 : 0, maximumFractionDigits: 2 })} ${currency.toUpperCase() === "EUR" ? "€" : currency.toUpperCase()}`;
export const date = (ms: number | null) => (ms === null ? "" : new Date(ms).toISOString().slice(0, 10));
export const dateTime = (ms: number | null) =>
  ms === null ? "" : new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC";

/** A service message as a page's sentence: its first letter upper case. */
export const capitalized = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}`;

/** A message of a table by a key from the query string: own keys only ("constructor" is none). */
export const known = (table: Record<string, string>, key: string | undefined) =>
  key !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;

/** Registration lets an app name itself at any length: pages show 80 characters at most. */
const MAX_APP_NAME = 80;
export const shortName = (name: string) => {
  const chars = Array.from(displayName(name));
  return chars.length > MAX_APP_NAME ? `${chars.slice(0, MAX_APP_NAME).join("")}…` : chars.join("");
};
