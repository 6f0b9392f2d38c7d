/**
 * Production guards: a public (https) deployment refuses to run with a development switch on, and
 * rows stored before secrets were protected are migrated (plaintext Mastodon tokens sealed by the
 * cron; plaintext download capabilities replaced by migration 0011).
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { MediaRunner } from "../../src/media-worker/media-runner";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/index";
import type { Env } from "../../src/env";
import { developmentSettingsInProduction } from "../../src/lib/deployment-guard";
import { isSealed } from "../../src/lib/sealed-text";
import { publisherSettings } from "../../src/services/social/channel-config";
import { maintainNow } from "../../src/services/billing/audit";
import migration from "../../migrations/0011_public_safety.sql?raw";
import { newAccount, postJson } from "../helpers/api";

const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;

describe("a public deployment with development settings", () => {
  it("refuses every request, with the reason in the logs only", async () => {
    const unsafe = {
      ...env,
      PUBLIC_BASE_URL: "https://api.example.com",
      DEV_MODE: "true",
      PUBLISH_ALLOW_PRIVATE_URLS: "false",
    } as Env;
    expect(developmentSettingsInProduction(unsafe)).toEqual(["DEV_MODE=true"]);
    for (const path of ["/api/v1/openapi.json", "/app/dev/outbox", "/api/v1/account"]) {
      const response = await worker.fetch!(new Request(`https://api.example.com${path}`) as never, unsafe, ctx);
      expect(response.status, path).toBe(500);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("internal_error");
      expect(body.error.message).not.toMatch(/DEV_MODE/);
    }
    // Every development switch counts; http (local development) and clean settings serve.
    expect(
      developmentSettingsInProduction({
        ...unsafe,
        DEV_MODE: "false",
        ALLOW_PRIVATE_URLS: "true",
        FAULT_R2_PUT_FAIL_RATE: "0.1",
      }),
    ).toEqual(["ALLOW_PRIVATE_URLS=true", "FAULT_R2_PUT_FAIL_RATE=0.1"]);
    expect(developmentSettingsInProduction({ ...unsafe, PUBLIC_BASE_URL: "http://127.0.0.1:8787" })).toEqual([]);
    const clean = {
      ...env,
      PUBLIC_BASE_URL: "https://api.example.com",
      DEV_MODE: "false",
      ALLOW_PRIVATE_URLS: "false",
      PUBLISH_ALLOW_PRIVATE_URLS: "false",
    } as Env;
    expect(
      (await worker.fetch!(new Request("https://api.example.com/api/v1/openapi.json") as never, clean, ctx)).status,
    ).toBe(200);
    // The cron does nothing, and queue batches are refused (they stay in the queue).
    await expect(worker.queue!({ queue: "media-jobs", messages: [] } as never, unsafe)).rejects.toThrow(
      /refusing to run/,
    );
  });

  it("keeps the media Worker's runner from claiming a job with its own unsafe settings", async () => {
    const stub = env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName("guarded-runner"));
    await runInDurableObject(stub, async (_instance, state) => {
      const faulty = new MediaRunner(state, {
        ...env,
        PUBLIC_BASE_URL: "https://api.example.com",
        FAULT_RUNNER_ABORT_RATE: "0.5",
      } as Env);
      await expect(faulty.run("job_unknown")).rejects.toThrow(/refusing to run: .*FAULT_RUNNER_ABORT_RATE=0.5/);
      // The same runner with clean settings goes on to the claim (nothing to claim here).
      expect(
        await new MediaRunner(state, {
          ...env,
          PUBLIC_BASE_URL: "https://api.example.com",
          DEV_MODE: "false",
          ALLOW_PRIVATE_URLS: "false",
          PUBLISH_ALLOW_PRIVATE_URLS: "false",
          FAULT_RUNNER_ABORT_RATE: "0",
        } as Env).run("job_unknown"),
      ).toBe("skipped");
    });
  });
});

describe("rows stored before their secrets were protected", () => {
  it("seals a Mastodon token stored in plain text, which still publishes", async () => {
    const account = await newAccount();
    const created = await postJson(
      "/api/v1/brands",
      {
        name: "Legacy",
        timeZone: "UTC",
        channels: [{ network: "mastodon", instanceUrl: inject("mastodonBaseUrl"), accessToken: "mastodon-test-token" }],
      },
      account.auth,
    );
    const { brandId } = (await created.json()) as { brandId: string };
    // As a row written before the encryption.
    await env.DB.prepare("UPDATE brand_channels SET config = ? WHERE brand_id = ?")
      .bind(JSON.stringify({ instanceUrl: inject("mastodonBaseUrl"), accessToken: "mastodon-test-token" }), brandId)
      .run();
    const summary = await maintainNow(env.DB, env.MEDIA, Date.now(), env);
    expect(summary.tokensSealed).toBeGreaterThanOrEqual(1);
    const row = await env.DB.prepare("SELECT * FROM brand_channels WHERE brand_id = ?")
      .bind(brandId)
      .first<{ config: string; network: "mastodon"; brand_id: string }>();
    const stored = JSON.parse(row!.config) as { accessToken: string };
    expect(isSealed(stored.accessToken)).toBe(true);
    expect(row!.config).not.toContain("mastodon-test-token");
    const settings = await publisherSettings(env, {
      ...row!,
      brandId: row!.brand_id,
      id: "chn_x",
      createdAt: 0,
    } as never);
    expect(settings).toMatchObject({ network: "mastodon", accessToken: "mastodon-test-token" });
  });

  it("replaces download capabilities stored in plain text with values nobody holds", async () => {
    const statement = migration
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .find((s) => s.startsWith("UPDATE `jobs`"))!;
    const account = await newAccount();
    const legacy = "dl_plaintextcapability0123456789";
    await env.DB.prepare(
      `INSERT INTO jobs (id, account_id, key_id, tool, params, input_upload_ids, status, cost, plan_debit, purchased_debit, balance_after, estimated_seconds, download_id, created_at)
       VALUES ('job_legacy_${Date.now()}', ?, 'key_x', 'convert', '{}', '[]', 'completed', 0, 0, 0, 0, 1, ?, ?)`,
    )
      .bind(account.accountId, legacy, Date.now())
      .run();
    const hashed = await env.DB.prepare("SELECT download_id FROM jobs WHERE length(download_id) = 64 LIMIT 1").first<{
      download_id: string;
    }>();
    await env.DB.prepare(statement.replace(/;$/, "")).run();
    expect(await env.DB.prepare("SELECT 1 FROM jobs WHERE download_id = ?").bind(legacy).first()).toBeNull();
    // Hashed capabilities (64 hex characters) are left alone.
    if (hashed)
      expect(
        await env.DB.prepare("SELECT 1 FROM jobs WHERE download_id = ?").bind(hashed.download_id).first(),
      ).not.toBeNull();
  });
});
