/**
 * One per brand: keeps an alarm at the brand's next due post. When it fires, the due posts are
 * queued for publication (each network once: see src/services/social/publishing.ts) and the alarm moves
 * to the next post. A repeated alarm finds nothing new to queue: deliveries are unique.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { dispatchDuePosts } from "../services/social/publishing";
import { withResilientD1 } from "../db/resilient-d1";

export class BrandScheduler extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, withResilientD1(env));
  }

  /** A post of `brandId` is due at `at`: the alarm fires then, or earlier if already set earlier. */
  async schedule(brandId: string, at: number): Promise<void> {
    await this.ctx.storage.put("brandId", brandId);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(Math.max(at, Date.now()));
  }

  async alarm(): Promise<void> {
    const brandId = await this.ctx.storage.get<string>("brandId");
    if (!brandId) return;
    const { nextAt } = await dispatchDuePosts(this.env, brandId, Date.now());
    if (nextAt !== null) await this.ctx.storage.setAlarm(nextAt);
  }
}
