"""What the tests share: the module under test, the stack they run against, media tools.

The stack is given by MEDIA_CREDITS_BASE_URL and MEDIA_CREDITS_API_KEY (the e2e suite sets them:
test/e2e/python-client.test.ts). Without them the tests that need it are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import media_credits  # noqa: E402  (after the path it is found on)

SCRATCH = Path(tempfile.mkdtemp(prefix="media-credits-python-"))


def stack_client() -> media_credits.MediaCredits:
    """A client of the stack under test, or the test is skipped when none is given."""
    base_url = os.environ.get("MEDIA_CREDITS_BASE_URL")
    api_key = os.environ.get("MEDIA_CREDITS_API_KEY")
    if not base_url or not api_key:
        raise unittest.SkipTest("no stack: set MEDIA_CREDITS_BASE_URL and MEDIA_CREDITS_API_KEY")
    return media_credits.MediaCredits(base_url, api_key)


def generate(name: str, *args: str) -> Path:
    """A media file made by native ffmpeg from ``args`` (lavfi sources) in the scratch folder."""
    target = SCRATCH / name
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args, str(target)], check=True)
    return target


def probe(path: Path) -> dict:
    """ffprobe's ``format`` and ``streams`` of a media file."""
    run = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(run.stdout)


def duration_of(path: Path) -> float:
    """The container's duration in seconds, by ffprobe."""
    return float(probe(path)["format"]["duration"])


def codecs_of(path: Path) -> dict:
    """The codec of each kind of stream: ``{"video": "vp8", "audio": "opus"}``."""
    return {stream["codec_type"]: stream["codec_name"] for stream in probe(path)["streams"]}


Request = Tuple[str, str, dict, bytes]


class LocalServer:
    """An HTTP server on loopback answering each request with ``answer(method, path, headers, body)``.

    Records every request as (method, path, headers, body). ``answer`` returns (status, headers,
    body), or None to close the connection without answering (a lost answer).
    """

    def __init__(self, answer: Callable[[str, str, dict, bytes], object]) -> None:
        self.requests: List[Request] = []
        self.received = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def handle_one_request(self) -> None:
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline or not self.parse_request():
                    self.close_connection = True
                    return
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {name.lower(): value for name, value in self.headers.items()}
                server.requests.append((self.command, self.path, headers, body))
                server.received.set()
                reply = answer(self.command, self.path, headers, body)
                if reply is None:
                    self.close_connection = True
                    return
                status, reply_headers, reply_body = reply  # type: ignore[misc]
                self.send_response(status)
                for name, value in {"content-length": str(len(reply_body)), **reply_headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply_body)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def json_reply(status: int, body: object, **headers: str) -> Tuple[int, dict, bytes]:
    return status, {"content-type": "application/json", **headers}, json.dumps(body).encode("utf-8")
