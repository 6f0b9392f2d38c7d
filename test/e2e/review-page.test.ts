/**
 * A client reviewing a video post in a real browser (Debian chromium driven by playwright-core)
 * against `wrangler dev`, on a phone (390 px) and a desktop (1280 px): the page plays the video,
 * the time field follows it, a comment goes in at 00:01, its timestamp seeks the video, the
 * request for changes carries it, and the owner reads it through the API. Without a script the
 * page still takes a comment (the time typed) and refuses one past the end, saying why.
 * Screenshots land in test-artifacts/screens (not committed).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FIXTURES, newClient, upload, type Client } from "./client";

const base = inject("e2eMainUrl");
const mastodon = inject("mastodonBaseUrl");
const shots = path.resolve(import.meta.dirname, "../../test-artifacts/screens");
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let browser: Browser;
beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--autoplay-policy=no-user-gesture-required"],
  });
});
afterAll(async () => {
  await browser?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

async function api<T = any>(client: Client, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base}/api/v1${route}`, {
    method,
    headers: { ...client.auth, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json();
  expect(response.status, JSON.stringify(answer)).toBe(200);
  return answer as T;
}

/** A post with the 2.5 s clip, submitted for the client's approval, and its review link. */
async function postForReview(client: Client) {
  const brand = await api(client, "POST", "/brands", {
    name: "Studio Nord",
    timeZone: "Europe/Paris",
    requiresApproval: true,
    channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" }],
  });
  const clip = await upload(client, path.join(FIXTURES, "clip.mp4"));
  const post = await api(client, "POST", "/posts", {
    brandId: brand.brandId,
    text: `Teaser for the autumn launch ${Date.now()}`,
    media: { uploadId: clip.uploadId },
  });
  await api(client, "POST", `/posts/${post.postId}/submit`, {});
  const link = await api(client, "POST", `/posts/${post.postId}/approval-links`);
  return { postId: post.postId as string, url: link.url as string };
}

/** The player's state, read in the page (the tests compile without the DOM's types). */
type Player = {
  readyState: number;
  duration: number;
  currentTime: number;
  paused: boolean;
  controls: boolean;
  muted: boolean;
  play(): Promise<void>;
  pause(): void;
};

const videoState = (page: Page) =>
  page.locator("video#player").evaluate((element) => {
    // Runs in the page: a cast only, nothing from this file is there.
    const v = element as unknown as Player;
    return {
      readyState: v.readyState,
      duration: v.duration,
      currentTime: v.currentTime,
      paused: v.paused,
      controls: v.controls,
    };
  });

describe("client review page in a browser", () => {
  for (const [width, height] of [
    [390, 844],
    [1280, 900],
  ] as const) {
    it(`plays the video, takes a comment at 00:01 and sends it with the request for changes (${width} px)`, async () => {
      const client = await newClient(base, 10);
      const { postId, url } = await postForReview(client);
      const page = await browser.newPage({ viewport: { width, height }, isMobile: width < 600 });
      await page.goto(url);
      const player = page.locator("video#player");
      expect(await player.count()).toBe(1);
      await expect.poll(async () => (await videoState(page)).readyState, { timeout: 10_000 }).toBeGreaterThan(0);
      const loaded = await videoState(page);
      expect(loaded.controls).toBe(true);
      expect(loaded.duration).toBeCloseTo(2.5, 0);
      // The page fits the phone: nothing wider than the screen.
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(width);
      await shot(page, `review-${width}-01-open`);

      // Play a moment, then seek to 1.4 s: paused there, the time field says 00:01.
      await player.evaluate(async (element) => {
        const v = element as unknown as Player;
        v.muted = true;
        await v.play();
      });
      await expect.poll(async () => (await videoState(page)).currentTime, { timeout: 10_000 }).toBeGreaterThan(0);
      await player.evaluate((element) => {
        const v = element as unknown as Player;
        v.pause();
        v.currentTime = 1.4;
      });
      await expect.poll(() => page.locator('input[name="timecode"]').inputValue()).toBe("00:01");
      await page.fill('input[name="authorName"]', "Camille");
      await page.fill('textarea[name="text"]', "Logo too big here");
      await shot(page, `review-${width}-02-writing`);
      await page.click('button:has-text("Add comment")');
      await page.waitForURL(/\?done=comment&t=1#comments$/);
      const comment = page.getByTestId("comment");
      expect(await comment.count()).toBe(1);
      expect(await comment.locator("a.timecode").innerText()).toBe("00:01");
      expect(await comment.innerText()).toContain("Logo too big here");
      // Back on the page, the video starts where the comment points (#t=1).
      await expect.poll(async () => (await videoState(page)).currentTime, { timeout: 10_000 }).toBeCloseTo(1, 1);
      // Its timestamp seeks the video in place.
      await player.evaluate((element) => {
        const v = element as unknown as Player;
        v.currentTime = 0;
      });
      const before = page.url();
      await comment.locator("a.timecode").click();
      await expect.poll(async () => (await videoState(page)).currentTime).toBeCloseTo(1, 1);
      expect(page.url()).toBe(before);
      await shot(page, `review-${width}-03-commented`);

      // The name given with the comment fills the decision; no message needed: the comment says what.
      expect(await page.locator('input[name="reviewerName"]').inputValue()).toBe("Camille");
      await page.click('button[value="request_changes"]');
      await page.waitForSelector(".notice.ok");
      expect(await page.getByTestId("post-state").innerText()).toBe("changes requested");
      expect(await page.locator('form[action$="/comments"]').count()).toBe(0);
      await shot(page, `review-${width}-04-changes-requested`);
      await page.close();

      const post = await api(client, "GET", `/posts/${postId}`);
      expect(post.state).toBe("changes_requested");
      expect(post.comments).toMatchObject([
        {
          author: "client",
          authorName: "Camille",
          atSeconds: 1,
          timecode: "00:01",
          text: "Logo too big here",
          mediaVersion: 1,
        },
      ]);
      expect(post.reviews).toMatchObject([{ decision: "changes_requested", reviewerName: "Camille", comment: null }]);
    });
  }

  it("works without a script: the time typed, a moment past the end refused with what was typed kept", async () => {
    const client = await newClient(base, 10);
    const { postId, url } = await postForReview(client);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(url);
    // The button that copies the video's time needs the script: hidden without it.
    expect(await page.locator("[data-use-time]").isVisible()).toBe(false);
    await page.fill('input[name="timecode"]', "00:09");
    await page.fill('input[name="authorName"]', "Inès");
    await page.fill('textarea[name="text"]', "The end card stays too long");
    await page.click('button:has-text("Add comment")');
    expect(await page.locator(".notice.error").innerText()).toContain(
      "Time: 00:09 is after the end of the video (00:02).",
    );
    expect(await page.locator('textarea[name="text"]').inputValue()).toBe("The end card stays too long");
    await shot(page, "review-1280-05-refused-no-script");
    await page.fill('input[name="timecode"]', "2");
    await page.click('button:has-text("Add comment")');
    await page.waitForURL(/\?done=comment&t=2#comments$/);
    // A timestamp is a link to the page with the video starting there.
    expect(await page.locator("a.timecode").getAttribute("href")).toBe("?t=2#player");
    expect(await page.locator("video#player").getAttribute("src")).toMatch(/\/media#t=2$/);
    await context.close();
    const post = await api(client, "GET", `/posts/${postId}`);
    expect(post.comments).toMatchObject([{ timecode: "00:02", atSeconds: 2, authorName: "Inès" }]);
  });
});
