import type { Env } from "./env";
export { MediaRunner } from "./durable-objects/media-runner";

export default {
  async fetch(): Promise<Response> {
    return new Response("ok");
  },
} satisfies ExportedHandler<Env>;
