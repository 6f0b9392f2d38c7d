/** /api/v1/voices/clone: an extension of the contract (docs/contract.md), documented in OpenAPI. */
import { createRoute } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { deleteClonedVoice, getClonedVoice, registerClonedVoice } from "../../services/media-jobs/voices";
import { jsonContent } from "../../lib/openapi";
import { ClonedVoiceDeleted, ClonedVoiceSchema, RegisterVoiceInput } from "../../contract/voices";

const tags = ["Voices"];
const security = [{ ApiKey: [] }];

const register = createRoute({
  method: "post",
  path: "/voices/clone",
  operationId: "registerClonedVoice",
  tags,
  security,
  summary: "Register or replace the account's cloned voice (free)",
  description:
    "uploadId of an audio or video sample with at least 10 s of speech. The voice lasts until replaced or removed. CPU engines match the sample's pitch with the nearest catalogue voice; GPU engines clone it.",
  request: { body: { required: true, content: { "application/json": { schema: RegisterVoiceInput } } } },
  responses: { 200: jsonContent(ClonedVoiceSchema, "Registered"), ...pickErrors(400, 401) },
});
const show = createRoute({
  method: "get",
  path: "/voices/clone",
  operationId: "getClonedVoice",
  tags,
  security,
  summary: "The account's cloned voice",
  responses: { 200: jsonContent(ClonedVoiceSchema, "Registered voice"), ...pickErrors(401, 404) },
});
const remove = createRoute({
  method: "delete",
  path: "/voices/clone",
  operationId: "deleteClonedVoice",
  tags,
  security,
  summary: "Remove the account's cloned voice",
  responses: { 200: jsonContent(ClonedVoiceDeleted, "Removed"), ...pickErrors(401, 404) },
});

export const voiceRoutes = createRouter()
  .openapi(register, async (c) =>
    c.json(
      await registerClonedVoice(c.env.DB, c.env.MEDIA, c.get("caller"), c.req.valid("json").uploadId, Date.now()),
      200,
    ),
  )
  .openapi(show, async (c) => c.json(await getClonedVoice(c.env.DB, c.get("caller")), 200))
  .openapi(remove, async (c) => {
    await deleteClonedVoice(c.env.DB, c.env.MEDIA, c.get("caller"));
    return c.json({ voice: "clone" as const, status: "deleted" as const }, 200);
  });
