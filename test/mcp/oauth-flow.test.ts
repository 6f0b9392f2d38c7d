/**
 * The connector's OAuth as an assistant meets it, through the Worker's fetch handler: the 401
 * challenge and discovery, dynamic client registration, /authorize with the developer-area
 * sign-in then consent, code exchange with PKCE S256, refresh-token rotation, the Connected
 * apps page and revocation. REST keys never open /api/mcp and OAuth tokens never open /api/v1.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newAccount } from "../helpers/api";
import { mailedLink, signedUpClient, WebClient } from "../helpers/web";

import {
  BASE,
  connect,
  exchangeCode,
  fetchAt,
  initialize,
  pkce,
  refresh,
  register,
  authorizeUrl,
} from "../helpers/mcp";

describe("connector OAuth", () => {
  it("answers an unauthenticated call with a 401 pointing at its metadata, which leads to the authorization server", async () => {
    const denied = await initialize();
    expect(denied.status).toBe(401);
    const challenge = denied.headers.get("www-authenticate")!;
    expect(challenge).toMatch(/^Bearer /);
    // The provider's empty refusals get the error shape, like every error of the API.
    expect(await denied.json()).toEqual({
      error: { code: "unauthorized", message: expect.stringMatching(/access token/) },
    });
    const unknown = await fetchAt("/.well-known/oauth-protected-resource");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found");
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1];
    const resource = (await (await fetchAt(metadataUrl)).json()) as {
      resource: string;
      authorization_servers: string[];
    };
    expect(resource.resource).toBe(`${BASE}/api/mcp`);
    const server = (await (await fetchAt("/.well-known/oauth-authorization-server")).json()) as Record<string, unknown>;
    expect(server).toMatchObject({
      authorization_endpoint: `${BASE}/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
    });
    expect(server.code_challenge_methods_supported).toContain("S256");
  });

  it("connects a native app whose only callback is its own URI scheme (Cursor's), after consent naming it", async () => {
    const callback = "cursor://anysphere.cursor-mcp/oauth/callback";
    const clientId = await register("Cursor", callback);
    const person = await signedUpClient(undefined, undefined, BASE);
    const { verifier, challenge } = await pkce();
    const consent = await person.client.get(authorizeUrl(clientId, challenge, "native-1", callback));
    const html = await consent.text();
    expect(consent.status, html).toBe(200);
    expect(html).toContain("the one that opens <strong>cursor:</strong> links");
    const handle = html.match(/name="handle" value="([^"]+)"/)![1]!;
    const account = html.match(/name="account" value="([^"]+)"/)![1]!;
    const approved = await person.client.post("/authorize", {
      handle,
      account,
      decision: "approve",
      scope_media: "on",
      scope_social: "on",
      daily_cap: "1000",
    });
    expect(approved.status).toBe(302);
    const location = new URL(approved.headers.get("location")!);
    expect(`${location.protocol}//${location.host}${location.pathname}`).toBe(callback);
    expect(location.searchParams.get("state")).toBe("native-1");
    const token = await exchangeCode(clientId, location.searchParams.get("code")!, verifier, callback);
    expect(token.status, await token.clone().text()).toBe(200);
    expect((await initialize(((await token.json()) as { access_token: string }).access_token)).status).toBe(200);
    // Remote plain http stays refused.
    const refused = await fetchAt("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: ["http://example.com/callback"], token_endpoint_auth_method: "none" }),
    });
    expect(refused.status).toBe(400);
  });

  it("shows the developer-area sign-in form at /authorize without a session", async () => {
    const clientId = await register();
    const { challenge } = await pkce();
    const page = await new WebClient(BASE).get(authorizeUrl(clientId, challenge));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('name="email"');
    expect(html).toContain('name="password"');
    expect(html).toContain('action="/app/login"');
    expect(html).toContain('name="next" value="/authorize?');
    // A request that could never succeed is refused before anyone signs in for it.
    const unknown = await new WebClient(BASE).get(authorizeUrl("no-such-client", challenge));
    expect(unknown.status).toBe(400);
    const refusal = await unknown.text();
    expect(refusal).toContain("Cannot connect this app");
    expect(refusal).not.toContain('name="password"');
  });

  it("connects after consent naming the client and its redirect host; the token opens /api/mcp only", async () => {
    const { html, tokens } = await connect();
    expect(html).toContain("Test Assistant");
    expect(html).toMatch(/data-testid="redirect-host">127\.0\.0\.1(:33418)?</);
    expect(html).toContain("app on your computer");
    expect(tokens.token_type.toLowerCase()).toBe("bearer");
    expect((await initialize(tokens.access_token)).status).toBe(200);
    // An OAuth token is not an API key.
    expect(
      (await fetchAt("/api/v1/account", { headers: { authorization: `Bearer ${tokens.access_token}` } })).status,
    ).toBe(401);
    // An API key is not an OAuth token.
    const account = await newAccount({ credits: 10 });
    const refused = await initialize(account.apiKey);
    expect(refused.status).toBe(401);
    // The challenge clients follow stays; the body has the API's error shape like every error.
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
    expect(await refused.json()).toEqual({
      error: { code: "unauthorized", message: expect.stringMatching(/^Invalid access token\. /) },
    });
  });

  it("rotates refresh tokens", async () => {
    const { clientId, tokens } = await connect();
    const first = await refresh(clientId, tokens.refresh_token);
    expect(first.status).toBe(200);
    const rotated = first.body;
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    expect((await initialize(rotated.access_token)).status).toBe(200);
  });

  it("revokes the grant when a replaced refresh token comes back (OAuth 2.1 reuse detection); a made-up one revokes nothing", async () => {
    // A thief refreshes with the stolen first token before the client uses its second one.
    const stolen = await connect();
    const second = await refresh(stolen.clientId, stolen.tokens.refresh_token);
    expect(second.status).toBe(200);
    const thief = await refresh(stolen.clientId, stolen.tokens.refresh_token);
    expect(thief.status).toBe(200);
    expect((await initialize(thief.body.access_token)).status).toBe(200);
    const client = await refresh(stolen.clientId, second.body.refresh_token);
    expect(client.status).toBe(400);
    expect(client.body).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/revoked for safety/),
    });
    expect((await initialize(thief.body.access_token)).status).toBe(401);
    expect((await refresh(stolen.clientId, thief.body.refresh_token)).status).toBe(400);
    expect((await refresh(stolen.clientId, stolen.tokens.refresh_token)).status).toBe(400);

    // A token two rotations old, presented after the client moved on, is a reuse too.
    const old = await connect();
    const next = await refresh(old.clientId, old.tokens.refresh_token);
    const latest = await refresh(old.clientId, next.body.refresh_token);
    expect(latest.status).toBe(200);
    expect((await refresh(old.clientId, old.tokens.refresh_token)).status).toBe(400);
    expect((await initialize(latest.body.access_token)).status).toBe(401);

    // A token this server never issued, in the grant's format: refused, the grant untouched.
    const kept = await connect();
    const [userId, grantId] = kept.tokens.refresh_token.split(":");
    const forged = await refresh(kept.clientId, `${userId}:${grantId}:${"x".repeat(32)}`);
    expect(forged.status).toBe(400);
    expect(forged.body.error_description).not.toMatch(/revoked/);
    const still = await refresh(kept.clientId, kept.tokens.refresh_token);
    expect(still.status).toBe(200);
    expect((await initialize(still.body.access_token)).status).toBe(200);
    // The stored record is a hash, never the token.
    const stored = await env.OAUTH_KV.list({ prefix: `refresh-issued:${grantId}:` });
    expect(stored.keys.length).toBeGreaterThan(0);
    expect(stored.keys.some((key) => key.name.includes(still.body.refresh_token.split(":")[2]))).toBe(false);
  });

  it("a refresh refused for another reason keeps the library's error and the grant: only a replaced token counts as reuse", async () => {
    const { clientId, tokens } = await connect();
    const other = await register("Another Assistant");
    const refusals: [Record<string, string>, string][] = [
      [{ resource: `${BASE}/api/mcp/` }, "invalid_target"],
      [{ resource: BASE }, "invalid_target"],
      [{ scope: "admin" }, "invalid_scope"],
    ];
    for (const [extra, error] of refusals) {
      const refused = await refresh(clientId, tokens.refresh_token, extra);
      expect(refused.status, JSON.stringify(extra)).toBe(400);
      expect(refused.body.error).toBe(error);
      expect(refused.body.error_description).not.toMatch(/used again|revoked/);
    }
    // The current token presented by another client: the library's refusal, nothing revoked.
    const foreign = await refresh(other, tokens.refresh_token);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error_description).not.toMatch(/used again|revoked/);
    expect((await initialize(tokens.access_token)).status).toBe(200);
    const still = await refresh(clientId, tokens.refresh_token);
    expect(still.status).toBe(200);
    // The same refusals with the token before the current one (which the library still accepts).
    expect((await refresh(clientId, tokens.refresh_token, { scope: "admin" })).body.error).toBe("invalid_scope");
    expect((await refresh(clientId, still.body.refresh_token)).status).toBe(200);
  });

  it("a refresh after the person disconnected the app, or after a code reuse ended the grant, says to connect again (not a reuse)", async () => {
    const { person, clientId, tokens } = await connect("Disconnected");
    const page = await (await person.client.get("/app/connected")).text();
    const grantId = page.match(/data-grant-id="([^"]+)"/)![1];
    expect((await person.client.post(`/app/connected/${grantId}/revoke`, {})).status).toBe(303);
    const disconnected = await refresh(clientId, tokens.refresh_token);
    expect(disconnected.status).toBe(400);
    expect(disconnected.body.error).toBe("invalid_grant");
    expect(disconnected.body.error_description).toMatch(/connect again/i);
    expect(disconnected.body.error_description).not.toMatch(/used again/);

    // The library revokes a grant whose authorization code is exchanged twice.
    const replayed = await connect("Code replayed");
    expect((await exchangeCode(replayed.clientId, replayed.code, replayed.verifier)).status).toBe(400);
    const ended = await refresh(replayed.clientId, replayed.tokens.refresh_token);
    expect(ended.status).toBe(400);
    expect(ended.body.error).toBe("invalid_grant");
    expect(ended.body.error_description).toMatch(/connect again/i);
    expect(ended.body.error_description).not.toMatch(/used again/);
  });

  it("lists the app under Connected apps; disconnecting it makes the next call a 401", async () => {
    const { person, tokens } = await connect("Claude (test)");
    const page = await (await person.client.get("/app/connected")).text();
    expect(page).toContain("Claude (test)");
    expect(page).toContain(`${BASE}/api/mcp`);
    const grantId = page.match(/data-grant-id="([^"]+)"/)![1];
    const revoke = await person.client.post(`/app/connected/${grantId}/revoke`, {});
    expect(revoke.status).toBe(303);
    expect(revoke.headers.get("location")).toBe("/app/connected?done=disconnected");
    expect((await initialize(tokens.access_token)).status).toBe(401);
    expect(await (await person.client.get("/app/connected")).text()).toContain("No app is connected.");
    // A second click finds nothing to disconnect, and says so.
    const again = await person.client.post(`/app/connected/${grantId}/revoke`, {});
    expect(again.headers.get("location")).toBe("/app/connected?done=not-connected");
    expect(await (await person.client.get("/app/connected?done=not-connected")).text()).toContain(
      "is not connected (any more)",
    );
    // With a trailing slash, the page itself.
    const slash = await person.client.get("/app/connected/");
    expect(slash.status).toBe(301);
    expect(new URL(slash.headers.get("location")!, BASE).pathname).toBe("/app/connected");
  });

  it("a password reset disconnects the account's assistants too: access and refresh tokens stop working", async () => {
    const { person, clientId, tokens } = await connect("Connected before the reset");
    expect((await initialize(tokens.access_token)).status).toBe(200);
    expect((await new WebClient(BASE).post("/app/reset", { email: person.email })).status).toBe(200);
    // The mail is sent after the answer (waitUntil): mailedLink waits for it.
    const path = new URL(await mailedLink(person.email, "/app/reset/")).pathname;
    expect((await new WebClient(BASE).post(path, { password: "a fresh password after theft" })).status).toBe(303);
    expect((await initialize(tokens.access_token)).status).toBe(401);
    const refreshed = await refresh(clientId, tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error_description).toMatch(/connect again/i);
    expect(refreshed.body.error_description).not.toMatch(/used again/);
  });

  it("sends Deny back to the client as access_denied", async () => {
    const person = await signedUpClient(undefined, undefined, BASE);
    const clientId = await register();
    const { challenge } = await pkce();
    const html = await (await person.client.get(authorizeUrl(clientId, challenge))).text();
    const handle = html.match(/name="handle" value="([^"]+)"/)![1];
    const denied = await person.client.post("/authorize", { handle, decision: "deny" });
    expect(denied.status).toBe(302);
    expect(new URL(denied.headers.get("location")!).searchParams.get("error")).toBe("access_denied");
  });

  it("grants only the account the consent page named, and shows a long client name cut short", async () => {
    const person = await signedUpClient(undefined, undefined, BASE);
    const other = await signedUpClient(undefined, undefined, BASE);
    const clientId = await register(`Assistant \u202E${"x".repeat(5000)}`);
    const { challenge } = await pkce();
    const html = await (await person.client.get(authorizeUrl(clientId, challenge))).text();
    expect(html).toContain(`Allow Assistant ${"x".repeat(70)}…`);
    expect(html).not.toContain("x".repeat(200));
    expect(html).not.toContain("\u202E");
    // A short name loses them too.
    const short = await register("\u202Etnatsissa");
    const shortHtml = await (await person.client.get(authorizeUrl(short, challenge))).text();
    expect(shortHtml).toContain("Allow tnatsissa to use your account?");
    const handle = html.match(/name="handle" value="([^"]+)"/)![1];
    const account = html.match(/name="account" value="([^"]+)"/)![1];
    expect(account).toBe(person.accountId);
    // In another tab, the browser signs out and in as another account, then Allow is clicked on the first page.
    expect((await person.client.post("/app/login", { email: other.email, password: other.password })).status).toBe(303);
    const refused = await person.client.post("/authorize", { handle, account, decision: "approve" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("shown for another account");
    const grants = await env.OAUTH_KV.list({ prefix: `grant:${other.accountId}:` });
    expect(grants.keys).toHaveLength(0);
  });

  it("requires PKCE of every client, confidential ones included", async () => {
    const person = await signedUpClient(undefined, undefined, BASE);
    const registered = await fetchAt("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "Confidential",
        redirect_uris: ["https://assistant.example/callback"],
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["authorization_code"],
        response_types: ["code"],
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id } = (await registered.json()) as { client_id: string };
    const params = new URLSearchParams({
      response_type: "code",
      client_id,
      redirect_uri: "https://assistant.example/callback",
      state: "s-9",
      scope: "media",
    });
    const answer = await person.client.get(`/authorize?${params}`);
    expect(answer.status).toBe(302);
    const back = new URL(answer.headers.get("location")!);
    expect(back.origin + back.pathname).toBe("https://assistant.example/callback");
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: "invalid_request", state: "s-9" });
    expect(back.searchParams.get("error_description")).toMatch(/PKCE/);
  });
});
