#!/usr/bin/env node
/**
 * `npm run dev`: local stack on one machine. Creates .dev.vars (random ADMIN_TOKEN,
 * BACKEND_SECRET, AUTH_SECRET, WEBHOOK_SIGNING_KEY and local Stripe keys) when missing, applies the D1 migrations to
 * the local state, starts the container backend (native ffmpeg) on $BACKEND_PORT (default
 * PORT + 1), the local Stripe on $STRIPE_PORT (default PORT + 2), the local Mastodon and Bluesky
 * on $MASTODON_PORT and $BLUESKY_PORT (PORT + 3 and PORT + 5) and `wrangler dev` on
 * 127.0.0.1:$PORT (default 8787) wired to both, then makes sure a dev account with credits,
 * a password and a key exists and prints the addresses, the admin token and the key.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { startLocalWorkers } from "./local-workers.ts";

const root = path.resolve(import.meta.dirname, "..");
const port = Number(process.env.PORT ?? 8787);
const inspectorPort = Number(process.env.INSPECTOR_PORT ?? port + 1442);
const base = `http://127.0.0.1:${port}`;
const backendPort = Number(process.env.BACKEND_PORT ?? port + 1);
const stripePort = Number(process.env.STRIPE_PORT ?? port + 2);
const mastodonPort = Number(process.env.MASTODON_PORT ?? port + 3);
const mediaPort = Number(process.env.MEDIA_PORT ?? port + 4);
const mastodonToken = "local-mastodon-token";
const blueskyPort = Number(process.env.BLUESKY_PORT ?? port + 5);
const bluesky = { handle: "brand.test", appPassword: "loca-lblu-esky-pass" };
const wranglerBin = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  console.error(
    `Node ${process.versions.node} is too old for wrangler; run through npm (npm run dev) so the project's Node 24 is used.`,
  );
  process.exit(1);
}

function readVars() {
  const file = path.join(root, ".dev.vars");
  const vars = existsSync(file)
    ? Object.fromEntries(
        readFileSync(file, "utf8")
          .split("\n")
          .filter((line) => /^\w+=/.test(line))
          .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1).replace(/^"|"$/g, "")]),
      )
    : {};
  let changed = false;
  const fresh = {
    ADMIN_TOKEN: () => randomBytes(24).toString("base64url"),
    BACKEND_SECRET: () => randomBytes(24).toString("base64url"),
    AUTH_SECRET: () => randomBytes(32).toString("base64url"),
    WEBHOOK_SIGNING_KEY: () => randomBytes(32).toString("base64url"),
    STRIPE_SECRET_KEY: () => `sk_test_local_${randomBytes(12).toString("hex")}`,
    STRIPE_WEBHOOK_SECRET: () => `whsec_${randomBytes(24).toString("base64url")}`,
  };
  for (const [name, make] of Object.entries(fresh)) {
    if (!vars[name]) {
      vars[name] = make();
      changed = true;
    }
  }
  if (changed)
    writeFileSync(
      file,
      Object.entries(vars)
        .map(([k, v]) => `${k}="${v}"`)
        .join("\n") + "\n",
      { mode: 0o600 },
    );
  return vars;
}

const vars = readVars();
const migrate = spawnSync(process.execPath, [wranglerBin, "d1", "migrations", "apply", "DB", "--local"], {
  cwd: root,
  env,
  stdio: ["ignore", "inherit", "inherit"],
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

const backend = spawn(process.execPath, [path.join(root, "backend", "src", "server.ts")], {
  cwd: path.join(root, "backend"),
  env: {
    ...process.env,
    PORT: String(backendPort),
    HOST: "127.0.0.1",
    BACKEND_SECRET: vars.BACKEND_SECRET,
    FONTS_DIR: path.join(root, "assets", "fonts"),
  },
  stdio: ["ignore", "inherit", "inherit"],
});

// The local Stripe (scripts/local-stripe): checkout pages, signed webhooks to this Worker.
const stripe = spawn(
  process.execPath,
  [
    path.join(root, "scripts", "local-stripe", "server.ts"),
    "--port",
    String(stripePort),
    "--webhook",
    `${base}/api/webhooks/stripe`,
  ],
  {
    cwd: root,
    env: {
      ...process.env,
      STRIPE_SECRET_KEY: vars.STRIPE_SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: vars.STRIPE_WEBHOOK_SECRET,
    },
    stdio: ["ignore", "inherit", "inherit"],
  },
);

// A local Mastodon (scripts/local-mastodon) to publish brands' posts to.
const mastodon = spawn(
  process.execPath,
  [path.join(root, "scripts", "local-mastodon", "server.ts"), "--port", String(mastodonPort), "--token", mastodonToken],
  { cwd: root, stdio: ["ignore", "inherit", "inherit"] },
);

// A local Bluesky (scripts/local-bluesky): one account, reached with an app password.
const blueskyServer = spawn(
  process.execPath,
  [
    path.join(root, "scripts", "local-bluesky", "server.ts"),
    "--port",
    String(blueskyPort),
    "--handle",
    bluesky.handle,
    "--app-password",
    bluesky.appPassword,
  ],
  { cwd: root, stdio: ["ignore", "inherit", "inherit"] },
);

// The media Worker (MediaRunner + ffmpeg.wasm) and the API Worker, two wrangler dev processes
// sharing .wrangler/state (scripts/local-workers.ts); .dev.vars gives both their secrets.
const workerVars = {
  BACKEND_URL: `http://127.0.0.1:${backendPort}`,
  PUBLIC_BASE_URL: base,
  STRIPE_API_BASE: `http://127.0.0.1:${stripePort}`,
  DEV_MODE: "true",
  PUBLISH_ALLOW_PRIVATE_URLS: "true",
  SIGNUP_CREDITS: String(process.env.SIGNUP_CREDITS ?? 100),
};
if (process.env.ALLOW_PRIVATE_URLS === "true") workerVars.ALLOW_PRIVATE_URLS = "true";
const mediaVars = {};
for (const name of ["MEDIA_ENGINE", "WASM_MEMORY_BUDGET_BYTES", "WASM_MAX_CPU_SECONDS"])
  if (process.env[name]) mediaVars[name] = process.env[name];
const helpers = [backend, stripe, mastodon, blueskyServer];
const { api: wrangler, media } = await startLocalWorkers({
  port,
  mediaPort,
  inspectorPort,
  registryDir: path.join(root, ".wrangler", "registry"),
  vars: workerVars,
  mediaVars,
  stdio: ["ignore", "inherit", "inherit"],
}).catch((error) => {
  console.error(error.message);
  for (const child of helpers) child.kill("SIGTERM");
  process.exit(1);
});
const stop = () => {
  wrangler.kill("SIGINT");
  media.kill("SIGINT");
  backend.kill("SIGTERM");
  stripe.kill("SIGTERM");
  mastodon.kill("SIGTERM");
  blueskyServer.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
wrangler.on("exit", (code) => {
  media.kill("SIGINT");
  backend.kill("SIGTERM");
  stripe.kill("SIGTERM");
  mastodon.kill("SIGTERM");
  blueskyServer.kill("SIGTERM");
  process.exit(code ?? 0);
});
backend.on("exit", (code) => {
  if (code) console.error(`media backend exited with code ${code}; heavy jobs will fail until it runs again`);
});

async function waitReady() {
  for (let i = 0; i < 240; i++) {
    try {
      const response = await fetch(`${base}/api/v1/openapi.json`);
      if (response.ok) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error("wrangler dev did not answer within 2 minutes");
}

async function admin(pathname, body) {
  const response = await fetch(`${base}/api/admin${pathname}`, {
    method: "POST",
    headers: { authorization: `Bearer ${vars.ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${pathname}: ${JSON.stringify(json)}`);
  return json;
}

/** The dev account survives restarts (.wrangler/dev-account.json); it is recreated if its key stopped working. */
async function ensureDevAccount() {
  const file = path.join(root, ".wrangler", "dev-account.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8"));
    const check = await fetch(`${base}/api/v1/account`, { headers: { authorization: `Bearer ${saved.apiKey}` } });
    if (check.ok && saved.password) return saved;
  }
  const email = `dev+${Date.now()}@example.com`;
  const password = randomBytes(9).toString("base64url");
  const account = await admin("/accounts", { email, credits: 100000, password });
  const key = await admin(`/accounts/${account.accountId}/keys`);
  const saved = { accountId: account.accountId, email, password, apiKey: key.apiKey };
  writeFileSync(file, JSON.stringify(saved, null, 2), { mode: 0o600 });
  return saved;
}

try {
  await waitReady();
  const account = await ensureDevAccount();
  const balance = await (
    await fetch(`${base}/api/v1/account`, { headers: { authorization: `Bearer ${account.apiKey}` } })
  ).json();
  console.log(`
  API ready
    base URL     ${base}
    media Worker http://127.0.0.1:${mediaPort} (MediaRunner + ffmpeg.wasm; jobs only, no routes)
    backend      http://127.0.0.1:${backendPort} (native ffmpeg)
    local Stripe http://127.0.0.1:${stripePort} (checkout pages, signed webhooks)
    docs         ${base}/docs
    developer    ${base}/app   sign in as ${account.email} / ${account.password}, or sign up (100 free credits)
    dev outbox   ${base}/app/dev/outbox (password-reset mail)
    connector    ${base}/api/mcp   (paste into an assistant; OAuth fields empty)
    local Mastodon http://127.0.0.1:${mastodonPort}  (access token ${mastodonToken}, for brands' channels)
    local Bluesky  http://127.0.0.1:${blueskyPort}  (handle ${bluesky.handle}, app password ${bluesky.appPassword}, as serviceUrl)
    admin token  ${vars.ADMIN_TOKEN}
    API key      ${account.apiKey}   (account ${account.accountId}, ${balance.balance} credits)

  Try: curl -H "Authorization: Bearer ${account.apiKey}" ${base}/api/v1/account
`);
} catch (error) {
  console.error(String(error));
  stop();
}
