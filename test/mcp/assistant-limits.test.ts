/**
 * Assistants get the limits their owners choose: on the consent page the owner allows media
 * processing, publishing, or both, and caps the credits per day and per call; a call outside them
 * is a tool error that says so and spends nothing; the connected-apps page shows each assistant's
 * scopes, caps and spending, and a change there applies to its very next call.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fixtureBytes } from "../helpers/api";
import { BASE, authorizeUrl, connect, mcpClient, pkce, register, toolError } from "../helpers/mcp";
import { accountRow, signedUpClient, WebClient } from "../helpers/web";

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

async function assistant(choices: Parameters<typeof connect>[1]) {
  const connection = await connect("Capped assistant", choices);
  const client = await mcpClient(connection.tokens.access_token);
  const callTool = (name: string, args: Record<string, unknown> = {}) =>
    client.callTool({ name, arguments: args }) as Promise<Result>;
  return { ...connection, callTool };
}

/** An upload of the account through the connector's one-time upload page, as the person would send it. */
async function uploadThroughLink(callTool: (name: string, args?: Record<string, unknown>) => Promise<Result>) {
  const link = (await callTool("create_upload_link")).structuredContent!;
  const path = new URL(link.url as string).pathname;
  const form = new FormData();
  form.append("file", new File([await fixtureBytes("clip.mp4")], "clip.mp4"));
  expect((await new WebClient(BASE).post(path, form)).status).toBe(303);
  return (await callTool("get_upload_link", { linkId: link.linkId })).structuredContent!.uploadId as string;
}

describe("assistant scopes and spending caps", () => {
  it("refuses the tools of a scope the owner did not allow, and spends nothing", async () => {
    const { callTool, person } = await assistant({ social: false });
    const refused = toolError(await callTool("list_brands"));
    expect(refused.code).toBe("invalid_request");
    expect(refused.message).toMatch(/did not allow this assistant to manage brands and posts/);
    // Media is allowed.
    expect((await callTool("get_balance")).isError).toBeFalsy();
    const uploadId = await uploadThroughLink(callTool);
    expect((await callTool("extract_audio", { uploadId })).isError).toBeFalsy();

    const { callTool: socialOnly } = await assistant({ media: false });
    const noMedia = toolError(await socialOnly("extract_audio", { uploadId }));
    expect(noMedia.message).toMatch(/did not allow this assistant to process media/);
    expect((await socialOnly("list_brands")).isError).toBeFalsy();
    expect((await accountRow(person.accountId)).purchased_credits).toBe(97);
  });

  it("stops a call over the per-call cap or the daily cap before any debit", async () => {
    const { callTool, person } = await assistant({ callCap: "2" });
    const uploadId = await uploadThroughLink(callTool);
    // extract_audio costs 3 credits: over the 2 a call.
    const overCall = toolError(await callTool("extract_audio", { uploadId }));
    expect(overCall.message).toMatch(/costs 3 credits, over the 2 credits a call/);
    expect(overCall).toMatchObject({ required: 3, perCallCap: 2 });
    expect((await accountRow(person.accountId)).purchased_credits).toBe(100);

    const daily = await assistant({ dailyCap: "5" });
    const dailyUpload = await uploadThroughLink(daily.callTool);
    expect((await daily.callTool("extract_audio", { uploadId: dailyUpload })).isError).toBeFalsy();
    const overDay = toolError(await daily.callTool("extract_audio", { uploadId: dailyUpload, format: "wav" }));
    expect(overDay.message).toMatch(/has spent 3 of the 5 credits a day/);
    expect(overDay).toMatchObject({ required: 3, dailyCap: 5, spentToday: 3 });
    expect((await accountRow(daily.person.accountId)).purchased_credits).toBe(97);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(daily.person.accountId)
      .first<{ n: number }>();
    expect(jobs!.n).toBe(1);
  });

  it("shows each assistant's scopes, caps and spending, and applies the owner's changes at its next call", async () => {
    const { callTool, person } = await assistant({ dailyCap: "3" });
    const uploadId = await uploadThroughLink(callTool);
    expect((await callTool("extract_audio", { uploadId })).isError).toBeFalsy();
    expect(toolError(await callTool("extract_audio", { uploadId, format: "wav" })).message).toMatch(
      /3 of the 3 credits a day/,
    );

    const page = await (await person.client.get("/app/connected")).text();
    expect(page).toContain("process media, posts and publishing");
    expect(page).toContain("3 credits a day");
    expect(page).toContain("spent today: 3");
    const grantId = page.match(/data-grant-id="([^"]+)"/)![1]!;
    // Raised to 10, publishing taken away: both at once.
    const saved = await person.client.post(`/app/connected/${grantId}/settings`, {
      scope_media: "on",
      daily_cap: "10",
      call_cap: "",
    });
    expect(saved.status).toBe(303);
    expect((await callTool("extract_audio", { uploadId, format: "wav" })).isError).toBeFalsy();
    expect(toolError(await callTool("list_brands")).message).toMatch(/did not allow/);
    // A setting outside what is allowed is refused and changes nothing.
    const bad = await person.client.post(`/app/connected/${grantId}/settings`, { daily_cap: "10" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("at least one thing");
  });

  it("lets only a confirmed email connect an assistant", async () => {
    const person = await signedUpClient(undefined, undefined, BASE, { verified: false });
    const clientId = await register("Early assistant");
    const { challenge } = await pkce();
    const consent = await person.client.get(authorizeUrl(clientId, challenge));
    expect(consent.status).toBe(400);
    expect(await consent.text()).toContain("Confirm your email first");
  });

  it("checks the email again at the grant, not only when the consent page was shown", async () => {
    const person = await signedUpClient(undefined, undefined, BASE);
    const clientId = await register("Late assistant");
    const { challenge } = await pkce();
    const html = await (await person.client.get(authorizeUrl(clientId, challenge))).text();
    const handle = html.match(/name="handle" value="([^"]+)"/)![1]!;
    // The address stops counting as confirmed between the page and the approval.
    await env.DB.prepare("UPDATE accounts SET email_verified_at = NULL WHERE id = ?").bind(person.accountId).run();
    const approved = await person.client.post("/authorize", {
      handle,
      account: person.accountId,
      decision: "approve",
      scope_media: "on",
      daily_cap: "10",
      call_cap: "",
    });
    expect(approved.status).toBe(400);
    expect(await approved.text()).toContain("Confirm your email first");
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM assistant_connections WHERE account_id = ?")
        .bind(person.accountId)
        .first("n"),
    ).toBe(0);
  });
});
