#!/usr/bin/env node
/**
 * `npm run admin -- <command>`: a thin client of /api/admin.
 *   create-account <email> [--credits N] [--plan payg|solo|starter|pro|scale]
 *   create-key <accountId>
 *   credit <accountId> <amount> <reason...>
 *   revoke <keyId>
 * API_URL (default http://127.0.0.1:8787) and ADMIN_TOKEN (default: from .dev.vars).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const base = process.env.API_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`;
function adminToken() {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.join(root, ".dev.vars");
  const match = existsSync(file) ? /^ADMIN_TOKEN="?([^"\n]+)"?/m.exec(readFileSync(file, "utf8")) : null;
  if (!match) throw new Error("Set ADMIN_TOKEN (or run npm run dev once to create .dev.vars).");
  return match[1];
}

async function request(method, pathname, body) {
  const response = await fetch(`${base}/api/admin${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken()}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  console.log(JSON.stringify(json, null, 2));
  if (!response.ok) process.exit(1);
}

const [command, ...rest] = process.argv.slice(2);
const option = (name) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 ? rest[i + 1] : undefined;
};
switch (command) {
  case "create-account": {
    const credits = option("credits");
    await request("POST", "/accounts", {
      email: rest[0],
      credits: credits === undefined ? undefined : Number(credits),
      plan: option("plan"),
    });
    break;
  }
  case "create-key":
    await request("POST", `/accounts/${rest[0]}/keys`);
    break;
  case "credit":
    await request("POST", `/accounts/${rest[0]}/credits`, {
      amount: Number(rest[1]),
      reason: rest.slice(2).join(" ") || "operator",
    });
    break;
  case "revoke":
    await request("DELETE", `/keys/${rest[0]}`);
    break;
  default:
    // The usage is this file's opening comment.
    console.log(
      /\/\*\*\n([\s\S]*?)\n \*\//.exec(readFileSync(new URL(import.meta.url), "utf8"))[1].replace(/^ \* ?/gm, ""),
    );
    process.exit(command ? 1 : 0);
}
