"""Retries and errors against a local HTTP server that misbehaves on purpose (no stack needed)."""

from __future__ import annotations

import json
import unittest
from typing import Callable, List, Optional

from support import LocalServer, SCRATCH, json_reply, media_credits

ENVELOPE = {"jobId": "job_1", "status": "queued", "creditsUsed": 1, "creditsRemaining": 9, "estimatedSeconds": 1}


class RetryTest(unittest.TestCase):
    def serve(self, replies: List[Optional[tuple]]) -> LocalServer:
        """A server giving ``replies`` in order (None: the connection closes unanswered), then 500."""
        queue = list(replies)

        def answer(method: str, path: str, headers: dict, body: bytes) -> Optional[tuple]:
            return (
                queue.pop(0) if queue else json_reply(500, {"error": {"code": "internal_error", "message": "no more"}})
            )

        server = LocalServer(answer)
        self.addCleanup(server.close)
        return server

    def client(self, server: LocalServer) -> media_credits.MediaCredits:
        client = media_credits.MediaCredits(server.url, "mk_test_x", backoff=0.01, retries=2)
        self.pauses: List[float] = []
        client._pause = self.pauses.append  # type: ignore[method-assign]
        return client

    def test_a_read_is_retried_after_a_5xx_and_a_lost_answer(self) -> None:
        server = self.serve(
            [
                json_reply(503, {"error": {"code": "internal_error", "message": "busy"}}),
                None,
                json_reply(200, {"balance": 5}),
            ]
        )
        self.assertEqual(self.client(server).account(), {"balance": 5})
        self.assertEqual([request[1] for request in server.requests], ["/api/v1/account"] * 3)
        self.assertEqual(self.pauses, [0.01, 0.02])

    def test_a_tool_call_is_retried_with_the_same_idempotency_key(self) -> None:
        server = self.serve([None, json_reply(502, {}), json_reply(200, ENVELOPE)])
        envelope = self.client(server).trim("upl_1", start=0, end=1, max_credits=3)
        self.assertEqual(envelope, ENVELOPE)
        keys = {request[2]["idempotency-key"] for request in server.requests}
        self.assertEqual(len(server.requests), 3)
        self.assertEqual(len(keys), 1)
        self.assertTrue(keys.pop().startswith("py-"))
        self.assertEqual(server.requests[0][3], b'{"uploadId": "upl_1", "start": 0, "end": 1, "maxCredits": 3}')

    def test_a_lost_tool_call_says_the_key_to_call_again_with(self) -> None:
        server = self.serve([None, None, None])
        with self.assertRaises(media_credits.NetworkError) as raised:
            self.client(server).call("convert", upload_id="upl_1", format="webm", idempotency_key="mine")
        self.assertEqual(raised.exception.idempotency_key, "mine")
        self.assertIn("idempotency_key='mine'", str(raised.exception))
        self.assertEqual(len(server.requests), 3)

    def test_an_upload_is_not_sent_again_after_a_5xx(self) -> None:
        source = SCRATCH / "retry.bin"
        source.write_bytes(b"x" * 3000)
        server = self.serve([json_reply(500, {"error": {"code": "internal_error", "message": "boom"}})])
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client(server).upload(source)
        self.assertEqual(
            (raised.exception.status, raised.exception.code, raised.exception.message), (500, "internal_error", "boom")
        )
        self.assertEqual(len(server.requests), 1)

    def test_429_is_waited_out_even_for_an_upload_whose_body_is_sent_again_whole(self) -> None:
        source = SCRATCH / "limited.bin"
        source.write_bytes(bytes(range(256)) * 9000)
        limited = json_reply(429, {"error": {"code": "rate_limited", "message": "slow down"}}, **{"retry-after": "7"})
        server = self.serve([limited, json_reply(200, {"uploadId": "upl_2", "durationSeconds": 1, "expiresIn": 10800})])
        self.assertEqual(self.client(server).upload(source, filename='a "b".bin')["uploadId"], "upl_2")
        self.assertEqual(self.pauses, [7.0])
        self.assertEqual(len(server.requests), 2)
        for _, path, headers, body in server.requests:
            self.assertEqual(path, "/api/v1/uploads")
            self.assertEqual(int(headers["content-length"]), len(body))
            self.assertIn(b'filename="a %22b%22.bin"', body)
            self.assertIn(source.read_bytes(), body)

    def test_an_error_body_s_extra_members_are_attributes(self) -> None:
        refused = {"error": {"code": "insufficient_credits", "message": "too dear", "required": 4, "maxCredits": 3}}
        server = self.serve([json_reply(402, refused)])
        with self.assertRaises(media_credits.ApiError) as raised:
            self.client(server).convert("upl_1", max_credits=3)
        error = raised.exception
        self.assertEqual(
            (error.status, error.code, error.required, error.max_credits, error.maxCredits),
            (402, "insufficient_credits", 4, 3, 3),
        )
        self.assertEqual(error.details, {"required": 4, "maxCredits": 3})
        self.assertEqual(len(server.requests), 1)
        with self.assertRaises(AttributeError):
            error.balance

    def test_unknown_fields_are_refused_before_anything_is_sent(self) -> None:
        server = self.serve([])
        client = self.client(server)
        with self.assertRaisesRegex(TypeError, "convert has no field fromat"):
            client.convert("upl_1", fromat="webm")
        with self.assertRaisesRegex(ValueError, "unknown tool"):
            client.call("sharpen", upload_id="upl_1")
        # A pipeline's steps are checked the same way, and a step takes no webhook or ceiling.
        with self.assertRaisesRegex(TypeError, r"step 2 \(convert\) has no field fromat"):
            client.create_pipeline([("trim", {"start": 0, "end": 1}), ("convert", {"fromat": "webm"})])
        with self.assertRaisesRegex(TypeError, r"step 1 \(trim\) has no field maxCredits"):
            client.quote_pipeline([{"tool": "trim", "params": {"start": 0, "end": 1, "max_credits": 3}}])
        with self.assertRaisesRegex(ValueError, "step 1: unknown tool 'sharpen'"):
            client.create_template("t", [("sharpen", {})])
        with self.assertRaisesRegex(TypeError, "steps or template_id"):
            client.create_pipeline([("trim", {})], template_id="tpl_1")
        self.assertEqual(server.requests, [])

    def test_a_pipeline_call_is_retried_with_the_same_idempotency_key(self) -> None:
        envelope = {"jobId": "job_1", "status": "queued", "creditsUsed": 2, "creditsRemaining": 8, "steps": []}
        server = self.serve([None, json_reply(200, envelope)])
        client = self.client(server)
        steps = [("trim", {"upload_id": "upl_1", "start": 0, "end": 1}), ("convert", {"format": "webm"})]
        self.assertEqual(client.create_pipeline(steps, max_credits=2), envelope)
        (_, path, first, body), (_, _, second, _) = server.requests
        self.assertEqual(path, "/api/v1/pipelines")
        self.assertRegex(first["idempotency-key"], r"^py-")
        self.assertEqual(second["idempotency-key"], first["idempotency-key"])
        self.assertEqual(
            json.loads(body),
            {
                "steps": [
                    {"tool": "trim", "params": {"uploadId": "upl_1", "start": 0, "end": 1}},
                    {"tool": "convert", "params": {"format": "webm"}},
                ],
                "maxCredits": 2,
            },
        )


if __name__ == "__main__":
    unittest.main()
