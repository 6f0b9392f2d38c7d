"""The client against a running stack (MEDIA_CREDITS_BASE_URL, MEDIA_CREDITS_API_KEY of a live key
with credits), doing real work: media made by ffmpeg, results checked by ffprobe."""

from __future__ import annotations

import threading
import time
import unittest
from pathlib import Path
from typing import List

from support import SCRATCH, LocalServer, codecs_of, duration_of, generate, media_credits, stack_client


class StackTest(unittest.TestCase):
    client: media_credits.MediaCredits
    clip: Path
    upload: dict

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = stack_client()
        cls.clip = generate(
            "clip.mp4",
            *("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=4"),
            *("-f", "lavfi", "-i", "sine=frequency=440:duration=4"),
            *("-shortest", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-c:a", "aac"),
        )
        cls.upload = cls.client.upload(cls.clip)

    def test_upload_quote_trim_with_max_credits_wait_download(self) -> None:
        self.assertRegex(self.upload["uploadId"], r"^upl_")
        self.assertAlmostEqual(self.upload["durationSeconds"], 4, delta=0.1)
        before = self.client.account()["balance"]

        # A job webhook to a listener here, verified with the account's secret.
        deliveries: List[tuple] = []
        delivered = threading.Event()

        def hook(method: str, path: str, headers: dict, body: bytes) -> tuple:
            deliveries.append((headers, body))
            delivered.set()
            return 200, {}, b""

        listener = LocalServer(hook)
        self.addCleanup(listener.close)

        quote = self.client.quote("trim", upload_id=self.upload["uploadId"], start=0.5, end=2.0)
        self.assertEqual((quote["tool"], quote["sufficient"]), ("trim", True))
        self.assertGreaterEqual(quote["creditsRequired"], 1)
        envelope = self.client.trim(
            self.upload["uploadId"],
            start=0.5,
            end=2.0,
            max_credits=quote["creditsRequired"],
            webhook_url=f"{listener.url}/hook",
        )
        self.assertEqual((envelope["status"], envelope["creditsUsed"]), ("queued", quote["creditsRequired"]))
        self.assertEqual(envelope["creditsRemaining"], before - quote["creditsRequired"])

        job = self.client.wait(envelope, timeout=120)
        self.assertEqual(job["status"], "completed", job.get("error"))
        result = Path(self.client.download(job, SCRATCH))
        self.assertEqual(result.name, job["result"]["filename"])
        self.assertAlmostEqual(duration_of(result), 1.5, delta=0.15)
        self.assertEqual(self.client.account()["balance"], before - envelope["creditsUsed"])

        self.assertTrue(delivered.wait(30), "no webhook delivery within 30 s")
        headers, body = deliveries[0]
        event = media_credits.verify_webhook(self.client.get_webhook()["secret"], headers, body)
        self.assertEqual((event["type"], event["data"]["jobId"]), ("job.completed", envelope["jobId"]))
        with self.assertRaises(media_credits.WebhookVerificationError):
            media_credits.verify_webhook(
                self.client.get_webhook()["secret"], headers, body.replace(b"completed", b"failed")
            )

        # Ended: cancelling answers 400 naming its state.
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.cancel_job(envelope)
        self.assertEqual((raised.exception.status, raised.exception.code), (400, "invalid_request"))
        self.assertIn("completed", raised.exception.message)

    def test_a_call_above_max_credits_is_refused_with_the_price(self) -> None:
        quote = self.client.quote("convert", upload_id=self.upload["uploadId"], format="webm")
        before = self.client.account()["balance"]
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.convert(self.upload["uploadId"], format="webm", max_credits=quote["creditsRequired"] - 1)
        error = raised.exception
        self.assertEqual((error.status, error.code), (402, "insufficient_credits"))
        self.assertEqual((error.required, error.max_credits), (quote["creditsRequired"], quote["creditsRequired"] - 1))
        self.assertEqual(self.client.account()["balance"], before)

    def test_an_invalid_request_is_a_400_with_its_code_and_field(self) -> None:
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.trim(self.upload["uploadId"], start=1, end=60)
        self.assertEqual((raised.exception.status, raised.exception.code), (400, "invalid_request"))
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.trim("upl_unknown", start=0, end=1)
        self.assertEqual(raised.exception.code, "invalid_request")
        self.assertIn("uploadId", raised.exception.message)
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.get_job("job_unknown")
        self.assertEqual((raised.exception.status, raised.exception.code), (404, "not_found"))

    def test_each_call_has_its_own_idempotency_key_unless_given_one(self) -> None:
        before = self.client.account()["balance"]
        first = self.client.extract_audio(self.upload["uploadId"])
        second = self.client.extract_audio(self.upload["uploadId"])
        self.assertNotEqual(first["jobId"], second["jobId"])
        key = f"py-test-{time.time()}"
        once = self.client.extract_audio(self.upload["uploadId"], idempotency_key=key)
        again = self.client.call("extract-audio", upload_id=self.upload["uploadId"], idempotency_key=key)
        self.assertEqual(again, once)
        paid = first["creditsUsed"] + second["creditsUsed"] + once["creditsUsed"]
        self.assertEqual(self.client.account()["balance"], before - paid)
        for job in (first, second, once):
            self.assertEqual(self.client.wait(job, timeout=120)["status"], "completed")

    def test_a_url_upload(self) -> None:
        data = self.clip.read_bytes()
        server = LocalServer(lambda method, path, headers, body: (200, {"content-type": "video/mp4"}, data))
        self.addCleanup(server.close)
        uploaded = self.client.upload_url(f"{server.url}/clip.mp4")
        self.assertAlmostEqual(uploaded["durationSeconds"], 4, delta=0.1)

    def test_a_resumable_upload_cut_after_one_part_and_resumed(self) -> None:
        # 100 s of 48 kHz stereo PCM: 19.2 MB, two parts of the fixed 16 MiB partSize.
        audio = generate(
            "long.wav", "-f", "lavfi", "-i", "sine=frequency=330:sample_rate=48000:duration=100", "-ac", "2"
        )
        sent: List[int] = []

        def cut_after_first(session: dict, part_number: int) -> None:
            sent.append(part_number)
            raise KeyError("connection cut")

        with self.assertRaises(media_credits.ResumableUploadInterrupted) as raised:
            self.client.upload_resumable(audio, concurrency=1, on_part=cut_after_first)
        upload_id = raised.exception.upload_id
        session = self.client.get_resumable_upload(upload_id)
        self.assertEqual((session["partSize"], session["partCount"]), (16 * 1024 * 1024, 2))
        self.assertEqual([part["partNumber"] for part in session["parts"]], [1])
        self.assertEqual(sent, [1])

        resumed: List[int] = []
        uploaded = self.client.upload_resumable(
            audio, upload_id=upload_id, on_part=lambda session, number: resumed.append(number)
        )
        self.assertEqual(resumed, [2])
        self.assertEqual(uploaded["uploadId"], upload_id)
        self.assertAlmostEqual(uploaded["durationSeconds"], 100, delta=0.1)

    def test_a_pipeline_quoted_run_step_by_step_and_downloaded(self) -> None:
        steps = [("trim", {"start": 0.5, "end": 2.5}), {"tool": "convert", "params": {"format": "webm"}}]
        quote = self.client.quote_pipeline(steps, upload_id=self.upload["uploadId"])
        self.assertEqual((quote["tool"], [step["tool"] for step in quote["steps"]]), ("pipeline", ["trim", "convert"]))
        self.assertEqual(quote["creditsRequired"], sum(step["creditsRequired"] for step in quote["steps"]))
        before = self.client.account()["balance"]

        envelope = self.client.create_pipeline(
            steps, upload_id=self.upload["uploadId"], max_credits=quote["creditsRequired"]
        )
        self.assertEqual((envelope["status"], envelope["creditsUsed"]), ("queued", quote["creditsRequired"]))
        self.assertEqual(
            [step["creditsUsed"] for step in envelope["steps"]], [step["creditsRequired"] for step in quote["steps"]]
        )
        changes: List[tuple] = []
        job = self.client.wait(envelope, timeout=180, on_step=lambda index, step: changes.append((index, step)))
        self.assertEqual(job["status"], "completed", job.get("error"))
        self.assertEqual([step["status"] for step in job["steps"]], ["completed", "completed"])
        for step in job["steps"]:
            self.assertIn(step["engine"], ("wasm", "backend"))
            self.assertLessEqual(step["startedAt"], step["finishedAt"])
        # Each step's change was reported once, the first step's end before the second's.
        ends = [index for index, step in changes if step["status"] == "completed"]
        self.assertEqual(ends, [0, 1], changes)

        result = Path(self.client.download(job, SCRATCH))
        self.assertEqual(result.suffix, ".webm")
        self.assertAlmostEqual(duration_of(result), 2.0, delta=0.15)
        self.assertIn(codecs_of(result)["video"], ("vp8", "vp9"))
        self.assertEqual(self.client.account()["balance"], before - quote["creditsRequired"])

    def test_a_template_saved_quoted_run_and_deleted(self) -> None:
        template = self.client.create_template(
            "python cut",
            [("trim", {"start": "{{start}}", "end": "{{end}}"}), ("extract-audio", {"format": "{{format}}"})],
            description="a cut, then its sound",
        )
        self.assertRegex(template["templateId"], r"^tpl_")
        self.assertEqual(template["variables"], ["start", "end", "format"])
        self.assertIn(template["templateId"], [t["templateId"] for t in self.client.list_templates()["templates"]])
        self.assertEqual(self.client.get_template(template["templateId"]), template)

        variables = {"start": 1, "end": 3, "format": "wav"}
        quote = self.client.quote_pipeline(
            template_id=template["templateId"], variables=variables, upload_id=self.upload["uploadId"]
        )
        before = self.client.account()["balance"]
        # A variable left out is refused before any debit.
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.create_pipeline(
                template_id=template["templateId"], variables={"start": 1, "end": 3}, upload_id=self.upload["uploadId"]
            )
        self.assertEqual((raised.exception.status, raised.exception.code), (400, "invalid_request"))
        self.assertIn("format", raised.exception.message)
        self.assertEqual(self.client.account()["balance"], before)

        job = self.client.run_pipeline(
            template_id=template["templateId"],
            variables=variables,
            upload_id=self.upload["uploadId"],
            max_credits=quote["creditsRequired"],
            timeout=180,
        )
        self.assertEqual(job["status"], "completed", job.get("error"))
        self.assertEqual([step["tool"] for step in job["steps"]], ["trim", "extract-audio"])
        result = Path(self.client.download(job, SCRATCH))
        self.assertEqual(result.suffix, ".wav")
        self.assertAlmostEqual(duration_of(result), 2.0, delta=0.15)
        self.assertEqual(set(codecs_of(result)), {"audio"})
        self.assertEqual(self.client.account()["balance"], before - quote["creditsRequired"])

        self.assertEqual(
            self.client.delete_template(template["templateId"]), {"templateId": template["templateId"], "deleted": True}
        )
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client.get_template(template["templateId"])
        self.assertEqual((raised.exception.status, raised.exception.code), (404, "not_found"))

    def test_account_webhook_settings(self) -> None:
        self.assertIn("balance", self.client.account())
        first = self.client.set_webhook("http://127.0.0.1:9/hooks")
        self.assertEqual(first["url"], "http://127.0.0.1:9/hooks")
        self.assertTrue(first["secret"].startswith("whsec_"))
        rotated = self.client.rotate_webhook_secret()
        self.assertEqual(rotated["secretVersion"], first["secretVersion"] + 1)
        self.assertNotEqual(rotated["secret"], first["secret"])
        self.client.delete_webhook()
        self.assertIsNone(self.client.get_webhook()["url"])


if __name__ == "__main__":
    unittest.main()
