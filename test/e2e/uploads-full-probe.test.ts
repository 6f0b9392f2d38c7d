/**
 * Containers whose headers hold no duration (a browser's MediaRecorder WebM, fragmented MP4):
 * the backend measures them by reading the whole file; without a backend they are refused
 * with a clear 400.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { generate, newClient } from "./client";

function streamedWebm(): string {
  // Written to a pipe, as MediaRecorder does: no Duration element, no Cues.
  const bytes = execFileSync(
    "ffmpeg",
    [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=25:duration=3",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=3",
      "-shortest",
      "-c:v",
      "libvpx",
      "-c:a",
      "libopus",
      "-f",
      "webm",
      "pipe:1",
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const file = path.join(tmpdir(), `recorder-${Date.now()}.webm`);
  writeFileSync(file, bytes);
  return file;
}

async function uploadRaw(base: string, auth: { authorization: string }, file: string) {
  const form = new FormData();
  form.append("file", new Blob([readFileSync(file)]), path.basename(file));
  const response = await fetch(`${base}/api/v1/uploads`, { method: "POST", headers: auth, body: form });
  return {
    status: response.status,
    body: (await response.json()) as { durationSeconds?: number; error?: { message: string } },
  };
}

describe("uploads the headers cannot time", () => {
  const recorder = streamedWebm();
  const fragmented = generate("fragmented.mp4", [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=25:duration=2.5",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-movflags",
    "frag_keyframe+empty_moov",
  ]);

  it("are measured by the backend", async () => {
    const client = await newClient(inject("e2eMainUrl"));
    const webm = await uploadRaw(client.base, client.auth, recorder);
    expect(webm.status, JSON.stringify(webm.body)).toBe(200);
    expect(webm.body.durationSeconds).toBeCloseTo(3, 1);
    const mp4 = await uploadRaw(client.base, client.auth, fragmented);
    expect(mp4.status, JSON.stringify(mp4.body)).toBe(200);
    expect(mp4.body.durationSeconds).toBeCloseTo(2.5, 1);
  });

  it("are refused with a clear 400 when no backend answers", async () => {
    const client = await newClient(inject("e2eNoBackendUrl"));
    const webm = await uploadRaw(client.base, client.auth, recorder);
    expect(webm.status).toBe(400);
    expect(webm.body.error?.message).toMatch(/duration/);
  });
});
