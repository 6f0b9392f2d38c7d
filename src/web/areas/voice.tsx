/** The account's cloned voice: register a sample, remove it. */
import { Hono, type Context } from "hono";
import { AppError } from "../../errors";
import { uploadFromMultipart } from "../../services/media-jobs/uploads";
import { deleteClonedVoice, getClonedVoice, registerClonedVoice } from "../../services/media-jobs/voices";
import { VoicePage } from "../pages/voice";
import { type WebEnv } from "../session";
import { userError, voiceSampleMessage, notice } from "../area-kit";

export function voicePages(area: Hono<WebEnv>): void {
  const voicePage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const voice = await getClonedVoice(c.env.DB, account).catch((error) => {
      if (error instanceof AppError && error.code === "not_found") return null;
      throw error;
    });
    return c.html(<VoicePage account={account} voice={voice} notice={notice(c)} {...extra} />, status);
  };
  area.get("/voice", (c) => voicePage(c));
  area.post("/voice", async (c) => {
    const account = c.get("account");
    try {
      const now = Date.now();
      const upload = await uploadFromMultipart(c.env, account.accountId, c.req.raw, now);
      await registerClonedVoice(c.env.DB, c.env.MEDIA, account, upload.uploadId, now);
      return voicePage(c, { notice: 'Voice registered: use "voice": "clone" on text-to-speech and voice-change.' });
    } catch (error) {
      return voicePage(c, { error: voiceSampleMessage(userError(error).message) }, 400);
    }
  });
  area.post("/voice/delete", async (c) => {
    const deleted = await deleteClonedVoice(c.env.DB, c.env.MEDIA, c.get("account")).then(
      () => true,
      (error) => {
        if (error instanceof AppError && error.code === "not_found") return false;
        throw error;
      },
    );
    return c.redirect(`/app/voice?done=${deleted ? "voice-deleted" : "no-voice"}`, 303);
  });
}
