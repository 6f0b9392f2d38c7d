/**
 * An assistant connecting as Claude or the MCP Inspector would: register, PKCE, /authorize with
 * the developer-area session, consent, code exchange; then an MCP client over the Worker's fetch.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "./api";
import { signedUpClient } from "./web";

export const BASE = "http://localhost";
const REDIRECT = "http://127.0.0.1:33418/callback";
export const fetchAt = (path: string, init: RequestInit = {}) => call(path, init, BASE);

const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

export async function pkce() {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  return { verifier, challenge };
}

export async function register(name = "Test Assistant", redirect = REDIRECT) {
  const response = await fetchAt("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirect],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { client_id: string }).client_id;
}

export function authorizeUrl(clientId: string, challenge: string, state = "state-1", redirect = REDIRECT) {
  const params = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirect,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
    scope: "media",
    resource: `${BASE}/api/mcp`,
  });
  return `/authorize?${params}`;
}

export const initialize = (token?: string) =>
  fetchAt("/api/mcp", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    }),
  });

/** What the consent form sends: the boxes and caps as the page shows them, unless changed. */
export interface ConsentChoices {
  media?: boolean;
  social?: boolean;
  dailyCap?: string;
  callCap?: string;
}

/** Sign-up, consent, code: what a person does in the browser when an assistant connects. */
export async function connect(name = "Test Assistant", choices: ConsentChoices = {}) {
  const person = await signedUpClient(undefined, undefined, BASE);
  const clientId = await register(name);
  const { verifier, challenge } = await pkce();
  const consent = await person.client.get(authorizeUrl(clientId, challenge));
  expect(consent.status).toBe(200);
  const html = await consent.text();
  const handle = html.match(/name="handle" value="([^"]+)"/)![1];
  const account = html.match(/name="account" value="([^"]+)"/)![1];
  const dailyCap = choices.dailyCap ?? html.match(/name="daily_cap"[^>]*value="([^"]*)"/)![1]!;
  const form: Record<string, string> = {
    handle,
    account,
    decision: "approve",
    daily_cap: dailyCap,
    call_cap: choices.callCap ?? "",
  };
  if (choices.media !== false) form.scope_media = "on";
  if (choices.social !== false) form.scope_social = "on";
  const approved = await person.client.post("/authorize", form);
  expect(approved.status).toBe(302);
  const location = new URL(approved.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
  expect(location.searchParams.get("state")).toBe("state-1");
  const code = location.searchParams.get("code")!;
  const token = await exchangeCode(clientId, code, verifier);
  expect(token.status, await token.clone().text()).toBe(200);
  const tokens = (await token.json()) as { access_token: string; refresh_token: string; token_type: string };
  return { person, clientId, html, tokens, code, verifier };
}

/** The authorization-code exchange a client makes after consent. */
export const exchangeCode = (clientId: string, code: string, verifier: string, redirect = REDIRECT) =>
  fetchAt("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: redirect,
      client_id: clientId,
      code_verifier: verifier,
      resource: `${BASE}/api/mcp`,
    }),
  });

/** A refresh at the token endpoint; `extra` adds or overrides form fields (resource, scope). */
export async function refresh(clientId: string, refreshToken: string, extra: Record<string, string> = {}) {
  const response = await fetchAt("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: clientId,
      ...extra,
    }),
  });
  const body = (await response.json()) as {
    access_token: string;
    refresh_token: string;
    error?: string;
    error_description?: string;
  };
  return { status: response.status, body };
}

/** The official MCP client, speaking to /api/mcp through the Worker's fetch handler. */
export async function mcpClient(accessToken: string): Promise<Client> {
  const client = new Client({ name: "test-assistant", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/api/mcp`), {
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${accessToken}` } },
  });
  await client.connect(transport);
  return client;
}

/**
 * The error a tool result carries: an `isError` result with no structuredContent (that belongs
 * to the tool's output schema, which describes successes) and `{code, message, ...}` as JSON text.
 */
export function toolError(result: {
  isError?: boolean;
  structuredContent?: unknown;
  content: { type: string; text?: string }[];
}) {
  expect(result.isError, result.content[0]?.text).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  expect(result.content).toHaveLength(1);
  return JSON.parse(result.content[0].text!) as { code: string; message: string } & Record<string, any>;
}
