import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

export class MediaRunner extends DurableObject<Env> {
  async ping(): Promise<string> {
    return "pong";
  }
}
