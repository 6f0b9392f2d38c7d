"""Webhook signatures (Standard Webhooks) on vectors computed here with hmac, no stack needed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import unittest

from support import media_credits

verify = media_credits.verify_webhook
KEY = bytes(range(32))
SECRET = "whsec_" + base64.b64encode(KEY).decode("ascii")
OTHER = "whsec_" + base64.b64encode(bytes(32)).decode("ascii")
BODY = (
    b'{"type":"job.completed","timestamp":"2026-11-23T07:00:00.000Z","livemode":true,'
    b'"data":{"jobId":"job_1","status":"completed"}}'
)
NOW = 1_790_000_000


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(key, f"{message_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(sig: str, timestamp: int = NOW) -> dict:
    return {"webhook-id": "msg_1", "webhook-timestamp": str(timestamp), "webhook-signature": sig}


class VerifyWebhookTest(unittest.TestCase):
    def test_a_known_vector(self) -> None:
        # Pinned, so the test also notices a change in how the vector itself is computed.
        sig = signature(KEY, "msg_1", NOW, BODY)
        self.assertEqual(
            sig, "v1," + base64.b64encode(hmac.new(KEY, b"msg_1.1790000000." + BODY, "sha256").digest()).decode()
        )
        event = verify(SECRET, headers(sig), BODY, now=NOW)
        self.assertEqual(event["data"]["jobId"], "job_1")
        # Names in any case, the body as text, a clock a little off.
        self.assertEqual(
            verify(
                SECRET,
                {"Webhook-Id": "msg_1", "WEBHOOK-TIMESTAMP": str(NOW), "Webhook-Signature": sig},
                BODY.decode(),
                now=NOW + 299,
            )["type"],
            "job.completed",
        )

    def test_a_tampered_body_id_or_timestamp_is_refused(self) -> None:
        sig = signature(KEY, "msg_1", NOW, BODY)
        with self.assertRaisesRegex(media_credits.WebhookVerificationError, "no signature matches"):
            verify(SECRET, headers(sig), BODY.replace(b"completed", b"failed"), now=NOW)
        with self.assertRaises(media_credits.WebhookVerificationError):
            verify(SECRET, {**headers(sig), "webhook-id": "msg_2"}, BODY, now=NOW)
        with self.assertRaises(media_credits.WebhookVerificationError):
            verify(SECRET, headers(sig, NOW + 1), BODY, now=NOW)
        with self.assertRaises(media_credits.WebhookVerificationError):
            verify(OTHER, headers(sig), BODY, now=NOW)

    def test_outside_five_minutes_is_refused(self) -> None:
        sig = signature(KEY, "msg_1", NOW, BODY)
        for now in (NOW + 301, NOW - 301):
            with self.assertRaisesRegex(media_credits.WebhookVerificationError, "tolerance"):
                verify(SECRET, headers(sig), BODY, now=now)

    def test_any_of_several_signatures_may_match(self) -> None:
        # During a rotation the API signs with the new secret and the previous one.
        both = f"{signature(bytes(32), 'msg_1', NOW, BODY)} {signature(KEY, 'msg_1', NOW, BODY)}"
        self.assertEqual(verify(SECRET, headers(both), BODY, now=NOW)["livemode"], True)
        self.assertEqual(verify(OTHER, headers(both), BODY, now=NOW)["livemode"], True)
        self.assertEqual(
            verify(["whsec_AAAA", SECRET], headers(signature(KEY, "msg_1", NOW, BODY)), BODY, now=NOW)["livemode"], True
        )

    def test_malformed_headers_are_refused(self) -> None:
        good = signature(KEY, "msg_1", NOW, BODY)
        cases = {
            "no signature header": {"webhook-id": "msg_1", "webhook-timestamp": str(NOW)},
            "another version": headers("v2," + good[3:]),
            "not base64": headers("v1,!!!"),
            "a timestamp in ms": headers(good, NOW * 1000),
            "a timestamp not a number": {**headers(good), "webhook-timestamp": "soon"},
        }
        for case, given in cases.items():
            with self.subTest(case), self.assertRaises(media_credits.WebhookVerificationError):
                verify(SECRET, given, BODY, now=NOW)


if __name__ == "__main__":
    unittest.main()
