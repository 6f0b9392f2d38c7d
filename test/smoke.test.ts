import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
it("smoke", async () => {
  const r = await exports.default.fetch("http://x/");
  expect(await r.text()).toBe("ok");
  const f = await fetch(`${env.FIXTURE_BASE_URL}/tone.wav`);
  expect(f.status).toBe(200);
  expect((await f.arrayBuffer()).byteLength).toBeGreaterThan(1000);
});
