"""A client of the media credits API (REST under /api/v1), using the Python standard library only.

Every operation of the API's OpenAPI document is declared once in ``OPERATIONS`` (method, path,
the required body fields of each content type, query and header parameters) and every tool in
``TOOLS`` (its required and optional fields): the methods send requests through these tables
only, and a test compares them with the running API's document (tests/test_openapi_coverage.py),
so a route or a field the API adds, renames or drops fails there rather than in a user's run.

Files are streamed (multipart body and resumable parts read from disk in 1 MiB chunks, results
written as they arrive), so a multi-GB file is never held in memory. Requests that are safe to
send again (reads, PUT and DELETE, and tool and pipeline calls, which carry an
``Idempotency-Key`` generated per call) are retried on lost connections and 5xx answers; any
request answered 429 is retried after ``Retry-After`` (the API does nothing for a refused request).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import http.client
import json
import os
import re
import ssl
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Sequence, Set, Tuple, Union
from urllib.parse import quote as quote_url, urlencode, urlsplit

__version__ = "1.0.0"
__all__ = [
    "ApiError",
    "JobFailedError",
    "JobTimeoutError",
    "MediaCredits",
    "MediaCreditsError",
    "NetworkError",
    "OPERATIONS",
    "ResumableUploadInterrupted",
    "TOOLS",
    "WebhookVerificationError",
    "verify_webhook",
]

DEFAULT_BASE_URL = "http://127.0.0.1:8787"
JSON = "application/json"
MULTIPART = "multipart/form-data"
OCTETS = "application/octet-stream"
#: Files larger than this go up in resumable parts (as the TypeScript CLI does): a Worker refuses
#: request bodies over 100 MB on most plans.
RESUMABLE_THRESHOLD = 95 * 1000 * 1000
#: The longest ``wait`` the API accepts on GET /api/v1/jobs/{id} (seconds).
MAX_WAIT_SECONDS = 50
#: Seconds a read waits while following a pipeline's steps (wait() with on_step): steps change
#: state before the job ends, and a read answers at once when the job ends.
STEP_WAIT_SECONDS = 2
#: Standard Webhooks' replay window: a delivery whose timestamp is further from now is refused.
WEBHOOK_TOLERANCE_SECONDS = 300
CHUNK_BYTES = 1 << 20

Json = Dict[str, Any]
BodyFactory = Callable[[], Iterable[bytes]]
#: A pipeline step: ``{"tool": "trim", "params": {"start": 0, "end": 5}}`` or ``("trim", {"start": 0, "end": 5})``.
Step = Union[Mapping[str, Any], Tuple[str, Mapping[str, Any]]]


# --- what the client covers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document, as the client sends it."""

    method: str
    path: str
    #: Content types of the request body, each with the fields the document marks required.
    bodies: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)
    query: Tuple[str, ...] = ()
    headers: Tuple[str, ...] = ()
    #: Safe to send again after a lost answer although neither GET, PUT nor DELETE.
    retry: bool = False

    @property
    def repeatable(self) -> bool:
        return self.retry or self.method in ("GET", "HEAD", "PUT", "DELETE")


@dataclass(frozen=True)
class Tool:
    """A tool: POST /api/v1/<name> with a JSON body, answered by a job envelope."""

    name: str
    operation_id: str
    required: Tuple[str, ...]
    optional: Tuple[str, ...] = ()

    @property
    def method_name(self) -> str:
        return self.name.replace("-", "_")

    @property
    def fields(self) -> Tuple[str, ...]:
        return self.required + self.optional + COMMON_TOOL_FIELDS


#: Fields every tool call takes: where to notify the end, and the most the call may cost.
COMMON_TOOL_FIELDS = ("webhookUrl", "maxCredits")

TOOLS: Dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "subtitles",
            "subtitles",
            ("uploadId",),
            (
                "style",
                "color",
                "effectColor",
                "position",
                "size",
                "captionWords",
                "srtContent",
                "fontId",
                "karaokeMode",
                "highlightColor",
                "shadowIntensity",
                "contourThickness",
                "boxOpacity",
            ),
        ),
        Tool("transcribe", "transcribe", ("uploadId",), ("language", "format", "srtSplitMode")),
        Tool("clean-audio", "cleanAudio", ("uploadId",), ("targetLufs", "truePeak", "removeSilence")),
        Tool("extract-audio", "extractAudio", ("uploadId",), ("format",)),
        Tool("convert", "convert", ("uploadId",), ("format",)),
        Tool("merge", "merge", ("uploadIds",)),
        Tool(
            "watermark",
            "watermark",
            ("uploadId",),
            ("watermarkUploadId", "watermarkText", "type", "opacity", "interval"),
        ),
        Tool("trim", "trim", ("uploadId", "start", "end")),
        Tool("text-to-speech", "textToSpeech", ("text",), ("voice",)),
        Tool("voice-change", "voiceChange", ("uploadId",), ("voice", "language")),
    )
}

_V1 = "/api/v1"
_SESSION = f"{_V1}/uploads/multipart/{{uploadId}}"

OPERATIONS: Dict[str, Operation] = {
    # Uploads, direct and resumable.
    "createUpload": Operation("POST", f"{_V1}/uploads", {MULTIPART: (), JSON: ("url",)}),
    "startResumableUpload": Operation("POST", f"{_V1}/uploads/multipart", {JSON: ("filename", "size")}),
    "getResumableUpload": Operation("GET", _SESSION),
    "uploadResumablePart": Operation("PUT", f"{_SESSION}/parts/{{partNumber}}", {OCTETS: ()}),
    # Complete again after success answers the same upload: safe to repeat.
    "completeResumableUpload": Operation("POST", f"{_SESSION}/complete", retry=True),
    "abortResumableUpload": Operation("DELETE", _SESSION),
    # Tools (their bodies in TOOLS), and quotes, which spend and create nothing.
    **{
        tool.operation_id: Operation("POST", f"{_V1}/{tool.name}", {JSON: tool.required}, headers=("idempotency-key",))
        for tool in TOOLS.values()
    },
    # A quote prices a tool call (tool, params) or a pipeline (steps, or templateId and variables).
    "createQuote": Operation("POST", f"{_V1}/quotes", {JSON: ()}, retry=True),
    # Pipelines (steps, or a template with its variables) and templates.
    "createPipeline": Operation("POST", f"{_V1}/pipelines", {JSON: ()}, headers=("idempotency-key",)),
    "listTemplates": Operation("GET", f"{_V1}/templates"),
    "createTemplate": Operation("POST", f"{_V1}/templates", {JSON: ("name", "steps")}),
    "getTemplate": Operation("GET", f"{_V1}/templates/{{templateId}}"),
    "deleteTemplate": Operation("DELETE", f"{_V1}/templates/{{templateId}}"),
    # Jobs.
    "getJob": Operation("GET", f"{_V1}/jobs/{{id}}", query=("wait",)),
    "cancelJob": Operation("POST", f"{_V1}/jobs/{{id}}/cancel"),
    "listJobWebhookDeliveries": Operation("GET", f"{_V1}/jobs/{{id}}/webhooks"),
    # Account, its webhook and its cloned voice.
    "getAccount": Operation("GET", f"{_V1}/account"),
    "getAccountWebhook": Operation("GET", f"{_V1}/account/webhook"),
    "setAccountWebhook": Operation("PUT", f"{_V1}/account/webhook", {JSON: ("url",)}),
    "deleteAccountWebhook": Operation("DELETE", f"{_V1}/account/webhook"),
    "rotateWebhookSecret": Operation("POST", f"{_V1}/account/webhook/rotate-secret"),
    "getClonedVoice": Operation("GET", f"{_V1}/voices/clone"),
    "registerClonedVoice": Operation("POST", f"{_V1}/voices/clone", {JSON: ("uploadId",)}),
    "deleteClonedVoice": Operation("DELETE", f"{_V1}/voices/clone"),
    # Brands and posts (docs/social.md).
    "listBrands": Operation("GET", f"{_V1}/brands"),
    "createBrand": Operation("POST", f"{_V1}/brands", {JSON: ("name", "timeZone")}),
    "getBrand": Operation("GET", f"{_V1}/brands/{{brandId}}"),
    "updateBrand": Operation("PATCH", f"{_V1}/brands/{{brandId}}", {JSON: ()}),
    "deleteBrand": Operation("DELETE", f"{_V1}/brands/{{brandId}}"),
    "getBrandStats": Operation("GET", f"{_V1}/brands/{{brandId}}/stats", query=("from", "to")),
    "listPosts": Operation("GET", f"{_V1}/posts", query=("brandId", "state")),
    "createPost": Operation("POST", f"{_V1}/posts", {JSON: ("brandId", "text")}),
    "getPost": Operation("GET", f"{_V1}/posts/{{postId}}"),
    "updatePost": Operation("PATCH", f"{_V1}/posts/{{postId}}", {JSON: ()}),
    "deletePost": Operation("DELETE", f"{_V1}/posts/{{postId}}"),
    "commentOnPost": Operation("POST", f"{_V1}/posts/{{postId}}/comments", {JSON: ("text",)}),
    "getPostMedia": Operation("GET", f"{_V1}/posts/{{postId}}/media"),
    "changePostState": Operation("POST", f"{_V1}/posts/{{postId}}/{{action}}", {JSON: ()}),
    "createApprovalLink": Operation("POST", f"{_V1}/posts/{{postId}}/approval-links"),
    "revokeApprovalLink": Operation("DELETE", f"{_V1}/approval-links/{{linkId}}"),
}


# --- errors ----------------------------------------------------------------------------------------


class MediaCreditsError(Exception):
    """Base class of the errors this module raises."""


class ApiError(MediaCreditsError):
    """An error answer of the API: ``{"error": {"code", "message", ...}}`` and its HTTP status.

    The error's other members are in ``details`` and readable as attributes, in either spelling:
    a 402 carries ``err.required`` and ``err.balance`` or ``err.max_credits`` (``maxCredits``).
    """

    def __init__(self, status: int, code: str, message: str, details: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: Dict[str, Any] = dict(details or {})

    def __getattr__(self, name: str) -> Any:
        details = self.__dict__.get("details", {})
        for key in (name, _camel(name)):
            if key in details:
                return details[key]
        raise AttributeError(f"{type(self).__name__} has no attribute or error member {name!r}")


class NetworkError(MediaCreditsError):
    """The connection failed or the answer was lost, after the retries a request allows.

    For a tool call, ``idempotency_key`` is the key it was sent with: calling again with it returns
    the first call's answer if the API received it, and debits nothing more.
    """

    def __init__(self, message: str, idempotency_key: Optional[str] = None) -> None:
        super().__init__(message)
        self.idempotency_key = idempotency_key


class JobTimeoutError(MediaCreditsError, TimeoutError):
    """The job did not end within the time given to wait()."""

    def __init__(self, job: Json, seconds: float) -> None:
        super().__init__(f"job {job.get('jobId')} is still {job.get('status')} after {seconds:g} s")
        self.job = job


class JobFailedError(MediaCreditsError):
    """The job failed (its credits were refunded) or has no result to download."""

    def __init__(self, job: Json) -> None:
        reason = job.get("error") or f"status {job.get('status')}, no result"
        super().__init__(f"job {job.get('jobId')}: {reason}")
        self.job = job


class ResumableUploadInterrupted(MediaCreditsError):
    """A resumable upload stopped before completing: pass ``upload_id`` to upload_resumable() to resume."""

    def __init__(self, upload_id: str, cause: BaseException) -> None:
        super().__init__(f"resumable upload {upload_id} interrupted ({cause}); resume with upload_id={upload_id!r}")
        self.upload_id = upload_id


class WebhookVerificationError(MediaCreditsError):
    """A webhook delivery whose headers, timestamp or signature do not verify."""


# --- helpers ---------------------------------------------------------------------------------------


def _camel(name: str) -> str:
    """``upload_id`` -> ``uploadId``; names already in camelCase are kept."""
    return re.sub(r"_([a-z0-9])", lambda match: match.group(1).upper(), name)


def _body_fields(fields: Mapping[str, Any]) -> Json:
    """Keyword arguments as a JSON body: camelCase names, ``None`` values left out."""
    return {_camel(name): value for name, value in fields.items() if value is not None}


def _steps_body(steps: Sequence[Step]) -> list:
    """Steps as the API takes them, each checked against its tool's fields before anything is sent.

    A step's params are its tool's fields (snake_case or camelCase) without the input: a step reads
    the previous step's result, only the first names its ``upload_id`` (or the pipeline's does).
    ``webhook_url`` and ``max_credits`` are the pipeline's, not a step's.
    """
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise TypeError("steps is a list of {'tool': ..., 'params': {...}} or (tool, params) pairs")
    body = []
    for number, step in enumerate(steps, 1):
        if isinstance(step, Mapping):
            extra = sorted(set(step) - {"tool", "params"})
            if extra:
                raise TypeError(f"step {number} has {', '.join(extra)}; a step has tool and params")
            tool, params = step.get("tool"), step.get("params") or {}
        elif isinstance(step, (tuple, list)) and len(step) == 2:
            tool, params = step
        else:
            raise TypeError(f"step {number} is not {{'tool': ..., 'params': {{...}}}} nor a (tool, params) pair")
        spec = TOOLS.get(str(tool))
        if spec is None:
            raise ValueError(f"step {number}: unknown tool {tool!r}; the tools: {', '.join(TOOLS)}")
        fields = _body_fields(params)
        unknown = sorted(set(fields) - set(spec.required + spec.optional))
        if unknown:
            raise TypeError(
                f"step {number} ({tool}) has no field {', '.join(unknown)}; "
                f"its fields: {', '.join(spec.required + spec.optional)}"
            )
        body.append({"tool": spec.name, "params": fields})
    return body


def _pipeline_source(
    steps: Optional[Sequence[Step]],
    template_id: Optional[str],
    variables: Optional[Mapping[str, Union[str, int, float, bool]]],
    upload_id: Optional[str],
) -> Json:
    """What a pipeline runs (its steps, or a template and its variables) and its first input."""
    if (steps is None) == (template_id is None):
        raise TypeError("give steps or template_id (with its variables), not both")
    if variables is not None and template_id is None:
        raise TypeError("variables go with template_id")
    return _body_fields(
        {
            "steps": None if steps is None else _steps_body(steps),
            "template_id": template_id,
            "variables": None if variables is None else dict(variables),
            "upload_id": upload_id,
        }
    )


def _job_id(job: Union[str, Mapping[str, Any]]) -> str:
    return job if isinstance(job, str) else str(job["jobId"])


def _header_value(text: str) -> str:
    """A quoted multipart parameter: no line breaks, quotes escaped as browsers do."""
    return re.sub(r"[\r\n]", " ", text).replace('"', "%22")


def _file_chunks(path: Union[str, os.PathLike], offset: int = 0, length: Optional[int] = None) -> Iterator[bytes]:
    """The bytes of a file (or of ``length`` bytes from ``offset``), CHUNK_BYTES at a time."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        remaining = length
        while remaining is None or remaining > 0:
            chunk = handle.read(CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining))
            if not chunk:
                break
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk
    if remaining:
        raise MediaCreditsError(f"{path} is shorter than expected (it changed during the upload?)")


def _error_of(status: int, raw: bytes) -> ApiError:
    try:
        error = json.loads(raw.decode("utf-8"))["error"]
        details = {key: value for key, value in error.items() if key not in ("code", "message")}
        return ApiError(status, str(error["code"]), str(error.get("message", "")), details)
    except (ValueError, KeyError, TypeError, AttributeError):
        text = raw.decode("utf-8", "replace").strip()[:200]
        return ApiError(status, f"http_{status}", text or f"HTTP {status}")


# --- the client ------------------------------------------------------------------------------------


class MediaCredits:
    """A client of one API server, authenticated by one key.

    ``base_url`` and ``api_key`` default to the environment variables MEDIA_CREDITS_BASE_URL and
    MEDIA_CREDITS_API_KEY (as for the CLI). ``retries`` bounds the new attempts after a lost
    connection or a 5xx answer (waiting ``backoff`` seconds, doubled each time) and
    ``rate_limit_retries`` those after a 429 (waiting what Retry-After says, a minute at most).
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 1.0,
        rate_limit_retries: int = 5,
        user_agent: str = f"media-credits-python/{__version__}",
    ) -> None:
        self.base_url = (base_url or os.environ.get("MEDIA_CREDITS_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("MEDIA_CREDITS_API_KEY")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.rate_limit_retries = rate_limit_retries
        self.user_agent = user_agent
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {self.base_url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None

    # --- transport -------------------------------------------------------------------------------

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _pause(self, seconds: float) -> None:
        time.sleep(seconds)

    def _exchange(
        self,
        method: str,
        target: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        body: Union[None, bytes, BodyFactory] = None,
        repeatable: bool = False,
        auth: bool = True,
        timeout: Optional[float] = None,
        read: Optional[Callable[[http.client.HTTPResponse], Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Sends one request (again when allowed) and returns ``read(response)`` of a 2xx answer.

        ``body`` is bytes or a function making the body's chunks anew for every attempt (a file is
        read again rather than kept). ``read`` consumes the answer inside the attempt, so an answer
        lost while it is read is retried like a lost connection; by default the answer is JSON.
        """
        sent = {"user-agent": self.user_agent, "accept": JSON, **(headers or {})}
        if auth:
            if not self.api_key:
                raise MediaCreditsError("no API key: pass api_key= or set MEDIA_CREDITS_API_KEY")
            sent["authorization"] = f"Bearer {self.api_key}"
        if isinstance(body, bytes):
            sent.setdefault("content-length", str(len(body)))
        rate_limited = failures = 0
        while True:
            connection = self._connection(timeout or self.timeout)
            try:
                payload = body() if callable(body) else body
                connection.request(method, self._prefix + target, body=payload, headers=sent)
                response = connection.getresponse()
                if 200 <= response.status < 300:
                    return (read or _read_json)(response)
                raw = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                # Nothing listens there (a wrong or stopped base URL): said at once.
                if not repeatable or failures >= self.retries or isinstance(error, ConnectionRefusedError):
                    hint = (
                        f"; call again with idempotency_key={idempotency_key!r} to get its answer"
                        if idempotency_key
                        else ""
                    )
                    raise NetworkError(f"{method} {target}: {error}{hint}", idempotency_key) from error
                self._pause(self.backoff * 2**failures)
                failures += 1
                continue
            finally:
                connection.close()
            if response.status == 429 and rate_limited < self.rate_limit_retries:
                rate_limited += 1
                self._pause(_retry_after(response))
                continue
            if response.status >= 500 and repeatable and failures < self.retries:
                self._pause(self.backoff * 2**failures)
                failures += 1
                continue
            raise _error_of(response.status, raw)

    def _op(
        self,
        operation_id: str,
        path_params: Optional[Mapping[str, Any]] = None,
        *,
        json_body: Optional[Json] = None,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        idempotency_key: Optional[str] = None,
    ) -> Json:
        """Calls an operation of OPERATIONS with a JSON body (or none) and returns its JSON answer."""
        operation = OPERATIONS[operation_id]
        target = self._target(operation, path_params)
        if query:
            unknown = set(query) - set(operation.query)
            if unknown:
                raise TypeError(f"{operation_id} takes no query parameter {', '.join(sorted(unknown))}")
            present = {name: value for name, value in query.items() if value is not None}
            if present:
                target += "?" + urlencode(present)
        sent = dict(headers or {})
        body: Optional[bytes] = None
        if json_body is not None:
            missing = [name for name in operation.bodies.get(JSON, ()) if name not in json_body]
            if missing:
                raise TypeError(f"{operation_id} needs {', '.join(missing)}")
            body = json.dumps(json_body).encode("utf-8")
            sent["content-type"] = JSON
        elif operation.method in ("POST", "PUT", "PATCH"):
            body = b""
        if idempotency_key:
            sent["idempotency-key"] = idempotency_key
        repeatable = operation.repeatable or bool(idempotency_key)
        return self._exchange(
            operation.method,
            target,
            headers=sent,
            body=body,
            repeatable=repeatable,
            timeout=timeout,
            idempotency_key=idempotency_key,
        )

    @staticmethod
    def _target(operation: Operation, path_params: Optional[Mapping[str, Any]]) -> str:
        values = {name: quote_url(str(value), safe="") for name, value in (path_params or {}).items()}
        try:
            return operation.path.format(**values)
        except KeyError as missing:
            raise TypeError(f"{operation.path} needs {missing}") from None

    # --- uploads -----------------------------------------------------------------------------------

    def upload(
        self,
        path: Union[str, os.PathLike],
        *,
        filename: Optional[str] = None,
        resumable: Optional[bool] = None,
        on_part: Optional[Callable[[Json, int], None]] = None,
    ) -> Json:
        """Uploads a local file and returns ``{uploadId, durationSeconds, expiresIn}``.

        Up to RESUMABLE_THRESHOLD bytes (or with ``resumable=False``) the file is streamed in one
        multipart/form-data POST; a larger file (or ``resumable=True``) goes in resumable parts.
        """
        size = os.path.getsize(path)
        name = filename or os.path.basename(os.fspath(path))
        if resumable or (resumable is None and size > RESUMABLE_THRESHOLD):
            return self.upload_resumable(path, filename=name, on_part=on_part)
        boundary = f"media-credits-{uuid.uuid4().hex}"
        head = (
            f"--{boundary}\r\n"
            f'Content-Disposition: form-data; name="file"; filename="{_header_value(name)}"\r\n'
            f"Content-Type: {OCTETS}\r\n\r\n"
        ).encode("utf-8")
        tail = f"\r\n--{boundary}--\r\n".encode("ascii")

        def body() -> Iterator[bytes]:
            yield head
            yield from _file_chunks(path, 0, size)
            yield tail

        operation = OPERATIONS["createUpload"]
        headers = {
            "content-type": f"{MULTIPART}; boundary={boundary}",
            "content-length": str(len(head) + size + len(tail)),
        }
        return self._exchange(
            operation.method, operation.path, headers=headers, body=body, timeout=max(self.timeout, 600.0)
        )

    def upload_url(self, url: str) -> Json:
        """Has the API fetch a public http(s) URL; returns the upload as upload() does."""
        return self._op("createUpload", json_body={"url": url}, timeout=max(self.timeout, 600.0))

    def start_resumable_upload(self, filename: str, size: int, content_type: Optional[str] = None) -> Json:
        """Opens a session: ``{uploadId, filename, size, partSize, partCount, expiresAt}``."""
        return self._op(
            "startResumableUpload",
            json_body=_body_fields({"filename": filename, "size": size, "content_type": content_type}),
        )

    def get_resumable_upload(self, upload_id: str) -> Json:
        """The session and the parts received so far (``parts``: ``partNumber``, ``size``, ``receivedAt``)."""
        return self._op("getResumableUpload", {"uploadId": upload_id})

    def upload_part(self, session: Mapping[str, Any], part_number: int, path: Union[str, os.PathLike]) -> Json:
        """Sends part ``part_number`` of the file at ``path`` (its bytes read from disk, again on a retry)."""
        offset = (part_number - 1) * int(session["partSize"])
        length = min(int(session["partSize"]), int(session["size"]) - offset)
        if part_number < 1 or length <= 0:
            raise ValueError(f"part {part_number} is outside 1..{session['partCount']}")
        operation = OPERATIONS["uploadResumablePart"]
        target = self._target(operation, {"uploadId": session["uploadId"], "partNumber": part_number})
        headers = {"content-type": OCTETS, "content-length": str(length)}
        return self._exchange(
            operation.method,
            target,
            headers=headers,
            body=lambda: _file_chunks(path, offset, length),
            repeatable=True,
            timeout=max(self.timeout, 600.0),
        )

    def complete_resumable_upload(self, upload_id: str) -> Json:
        """Assembles the parts and ingests the file; answers as upload() does."""
        return self._op("completeResumableUpload", {"uploadId": upload_id}, timeout=max(self.timeout, 600.0))

    def abort_resumable_upload(self, upload_id: str) -> Json:
        return self._op("abortResumableUpload", {"uploadId": upload_id})

    def upload_resumable(
        self,
        path: Union[str, os.PathLike],
        *,
        upload_id: Optional[str] = None,
        filename: Optional[str] = None,
        content_type: Optional[str] = None,
        concurrency: int = 3,
        on_part: Optional[Callable[[Json, int], None]] = None,
    ) -> Json:
        """Uploads a file in parts of the session's ``partSize`` (16 MiB), ``concurrency`` at a time.

        With ``upload_id`` it resumes that session: it asks which parts arrived and sends only the
        others. ``on_part(session, part_number)`` is called after each part is stored. If anything
        stops the parts, ResumableUploadInterrupted says the ``upload_id`` to resume with.
        """
        size = os.path.getsize(path)
        if upload_id is None:
            session = self.start_resumable_upload(filename or os.path.basename(os.fspath(path)), size, content_type)
            received: Set[int] = set()
        else:
            session = self.get_resumable_upload(upload_id)
            if int(session["size"]) != size:
                raise ValueError(f"{path} has {size} bytes; upload {upload_id} was opened for {session['size']}")
            received = {int(part["partNumber"]) for part in session.get("parts", [])}
        missing = [number for number in range(1, int(session["partCount"]) + 1) if number not in received]
        try:
            self._send_parts(session, path, missing, max(1, concurrency), on_part)
        except Exception as error:
            raise ResumableUploadInterrupted(str(session["uploadId"]), error) from error
        return self.complete_resumable_upload(str(session["uploadId"]))

    def _send_parts(
        self,
        session: Json,
        path: Union[str, os.PathLike],
        numbers: Sequence[int],
        concurrency: int,
        on_part: Optional[Callable[[Json, int], None]],
    ) -> None:
        """At most ``concurrency`` parts in flight; a new one starts only after on_part() of an ended one."""
        pending = list(numbers)
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            running: Dict[Future, int] = {}
            try:
                while pending or running:
                    while pending and len(running) < concurrency:
                        number = pending.pop(0)
                        running[pool.submit(self.upload_part, session, number, path)] = number
                    done, _ = wait_futures(list(running), return_when=FIRST_COMPLETED)
                    for future in done:
                        number = running.pop(future)
                        future.result()
                        if on_part:
                            on_part(session, number)
            finally:
                for future in running:
                    future.cancel()

    # --- tools and quotes --------------------------------------------------------------------------

    @staticmethod
    def _tool_body(tool: str, params: Mapping[str, Any]) -> Json:
        spec = TOOLS.get(tool)
        if spec is None:
            raise ValueError(f"unknown tool {tool!r}; the tools: {', '.join(TOOLS)}")
        body = _body_fields(params)
        unknown = sorted(set(body) - set(spec.fields))
        if unknown:
            raise TypeError(f"{tool} has no field {', '.join(unknown)}; its fields: {', '.join(spec.fields)}")
        missing = [name for name in spec.required if name not in body]
        if missing:
            raise TypeError(f"{tool} needs {', '.join(missing)}")
        return body

    def call(self, tool: str, *, idempotency_key: Optional[str] = None, **params: Any) -> Json:
        """Calls a tool (``"trim"``, ``"clean-audio"``...) and returns its job envelope.

        Fields are given in snake_case or camelCase (``upload_id=``, ``max_credits=``,
        ``webhook_url=``). The call carries an Idempotency-Key (a new one unless given), so it is
        retried safely after a lost answer: the API returns the first answer and debits once.
        """
        body = self._tool_body(tool, params)
        key = idempotency_key or f"py-{uuid.uuid4()}"
        return self._op(TOOLS[tool].operation_id, json_body=body, idempotency_key=key)

    def quote(self, tool: str, **params: Any) -> Json:
        """What the call would debit now: ``{tool, creditsRequired, estimatedSeconds, balance, sufficient, plan}``."""
        return self._op("createQuote", json_body={"tool": tool, "params": self._tool_body(tool, params)})

    def quote_pipeline(
        self,
        steps: Optional[Sequence[Step]] = None,
        *,
        template_id: Optional[str] = None,
        variables: Optional[Mapping[str, Union[str, int, float, bool]]] = None,
        upload_id: Optional[str] = None,
    ) -> Json:
        """What the pipeline would debit now: a quote with ``tool == "pipeline"`` and its ``steps``
        (each ``{tool, creditsRequired, estimatedSeconds}``), checked as create_pipeline() would be."""
        return self._op("createQuote", json_body=_pipeline_source(steps, template_id, variables, upload_id))

    def run(self, tool: str, *, timeout: float = 3600.0, **params: Any) -> Json:
        """Calls a tool and waits for its job to end; returns the job status (see wait())."""
        return self.wait(self.call(tool, **params), timeout=timeout)

    def subtitles(self, upload_id: str, **options: Any) -> Json:
        """Burns styled captions into a video (automatic transcription, or ``srt_content``)."""
        return self.call("subtitles", upload_id=upload_id, **options)

    def transcribe(self, upload_id: str, **options: Any) -> Json:
        """Text or SRT (``format="srt"``) of the speech of a video or audio."""
        return self.call("transcribe", upload_id=upload_id, **options)

    def clean_audio(self, upload_id: str, **options: Any) -> Json:
        """Removes background noise and improves the voice."""
        return self.call("clean-audio", upload_id=upload_id, **options)

    def extract_audio(self, upload_id: str, **options: Any) -> Json:
        """The audio of a video as mp3, wav or aac (``format=``)."""
        return self.call("extract-audio", upload_id=upload_id, **options)

    def convert(self, upload_id: str, **options: Any) -> Json:
        """Another container: mp4, webm, mov, avi or mkv (``format=``)."""
        return self.call("convert", upload_id=upload_id, **options)

    def merge(self, upload_ids: Sequence[str], **options: Any) -> Json:
        """Videos one after another, in the order given (2 to 20)."""
        return self.call("merge", upload_ids=list(upload_ids), **options)

    def watermark(self, upload_id: str, **options: Any) -> Json:
        """An image (``watermark_upload_id=``) or a text (``watermark_text=``) over a video."""
        return self.call("watermark", upload_id=upload_id, **options)

    def trim(self, upload_id: str, *, start: float, end: float, **options: Any) -> Json:
        """The segment from ``start`` to ``end`` seconds."""
        return self.call("trim", upload_id=upload_id, start=start, end=end, **options)

    def text_to_speech(self, text: str, **options: Any) -> Json:
        """A .wav of ``text`` spoken by ``voice=`` (lea by default)."""
        return self.call("text-to-speech", text=text, **options)

    def voice_change(self, upload_id: str, **options: Any) -> Json:
        """Replaces the voice of a video with ``voice=``."""
        return self.call("voice-change", upload_id=upload_id, **options)

    # --- pipelines and templates ---------------------------------------------------------------------

    def create_pipeline(
        self,
        steps: Optional[Sequence[Step]] = None,
        *,
        template_id: Optional[str] = None,
        variables: Optional[Mapping[str, Union[str, int, float, bool]]] = None,
        upload_id: Optional[str] = None,
        max_credits: Optional[int] = None,
        webhook_url: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Json:
        """Runs up to ten tools in order as one job and returns its envelope, with ``steps``.

        ``steps`` are ``{"tool": ..., "params": {...}}`` or ``(tool, params)``, each reading the
        previous step's result: only the first names its input, or ``upload_id`` does. Or
        ``template_id`` and ``variables`` run a saved template. The whole pipeline is priced and
        debited now (one ledger entry per step); ``max_credits`` caps it (402 before any debit). The
        call carries an Idempotency-Key, as a tool call does. A failed pipeline is refunded in full.
        """
        body = _pipeline_source(steps, template_id, variables, upload_id)
        body.update(_body_fields({"max_credits": max_credits, "webhook_url": webhook_url}))
        key = idempotency_key or f"py-{uuid.uuid4()}"
        return self._op("createPipeline", json_body=body, idempotency_key=key)

    def run_pipeline(
        self,
        steps: Optional[Sequence[Step]] = None,
        *,
        timeout: float = 3600.0,
        on_step: Optional[Callable[[int, Json], None]] = None,
        **options: Any,
    ) -> Json:
        """create_pipeline() then wait(); returns the job status, each step's state in ``steps``."""
        return self.wait(self.create_pipeline(steps, **options), timeout=timeout, on_step=on_step)

    def list_templates(self) -> Json:
        """``{"templates": [...]}``, newest first, each with its ``steps`` and ``variables``."""
        return self._op("listTemplates")

    def create_template(self, name: str, steps: Sequence[Step], *, description: Optional[str] = None) -> Json:
        """Saves steps under a name; any text in their params may hold ``{{name}}`` placeholders that
        a run fills from ``variables`` (a parameter that is exactly ``"{{start}}"`` takes the value with
        its type). Returns the template: ``{templateId, name, steps, variables, createdAt}``."""
        return self._op(
            "createTemplate",
            json_body=_body_fields({"name": name, "description": description, "steps": _steps_body(steps)}),
        )

    def get_template(self, template_id: str) -> Json:
        return self._op("getTemplate", {"templateId": template_id})

    def delete_template(self, template_id: str) -> Json:
        """Deletes the template (jobs started from it keep their steps): ``{templateId, deleted}``."""
        return self._op("deleteTemplate", {"templateId": template_id})

    # --- jobs ----------------------------------------------------------------------------------------

    def get_job(self, job: Union[str, Mapping[str, Any]], wait: int = 0) -> Json:
        """The job's status; with ``wait`` (0-50 s) the answer comes when the job ends or the time is up."""
        seconds = max(0, min(MAX_WAIT_SECONDS, int(wait)))
        query = {"wait": seconds} if seconds else None
        return self._op("getJob", {"id": _job_id(job)}, query=query, timeout=self.timeout + seconds)

    def wait(
        self,
        job: Union[str, Mapping[str, Any]],
        *,
        timeout: float = 3600.0,
        on_step: Optional[Callable[[int, Json], None]] = None,
    ) -> Json:
        """Long-polls the job until it is completed or failed, and returns its status.

        Each read waits on the server until the job ends (at most 50 s), so there is no polling
        delay. Raises JobTimeoutError after ``timeout`` seconds. A failed job is returned (its
        ``error`` says why; its credits were refunded): check ``status``. A pipeline's status has
        ``steps``, each ``{tool, status, creditsUsed, engine, startedAt, finishedAt, error}``;
        ``on_step(index, step)`` is called each time a step's status changes (from queued), reading
        every 2 s while the pipeline runs.
        """
        deadline = time.monotonic() + timeout
        seen: Dict[int, str] = {}
        per_read = MAX_WAIT_SECONDS
        while True:
            remaining = deadline - time.monotonic()
            status = self.get_job(job, wait=int(min(per_read, max(0.0, remaining))))
            steps = status.get("steps")
            if on_step is not None and isinstance(steps, list):
                per_read = STEP_WAIT_SECONDS
                for index, step in enumerate(steps):
                    if step.get("status") != seen.get(index, "queued"):
                        seen[index] = step.get("status")
                        on_step(index, step)
            if status.get("status") in ("completed", "failed"):
                return status
            if time.monotonic() >= deadline:
                raise JobTimeoutError(status, timeout)

    def cancel_job(self, job: Union[str, Mapping[str, Any]]) -> Json:
        """Cancels a queued or processing job (it fails, and is refunded)."""
        return self._op("cancelJob", {"id": _job_id(job)})

    def job_webhooks(self, job: Union[str, Mapping[str, Any]]) -> Json:
        """The job's webhook deliveries and their attempts."""
        return self._op("listJobWebhookDeliveries", {"id": _job_id(job)})

    def download(self, job: Union[str, Mapping[str, Any]], path: Union[str, os.PathLike]) -> str:
        """Writes a completed job's result to ``path`` (a folder: the result's name inside it).

        ``job`` is a job status, an envelope or an id (read when it carries no result). The file
        is written under a temporary name and renamed, so a cut leaves no half file. Downloads
        need no key: the URL is the capability. Raises JobFailedError when there is no result.
        """
        status = job if isinstance(job, Mapping) and "result" in job else self.get_job(job)
        result = status.get("result")
        if status.get("status") != "completed" or not result:
            raise JobFailedError(dict(status))
        target = os.fspath(path)
        if os.path.isdir(target):
            target = os.path.join(target, os.path.basename(str(result["filename"])))
        partial = f"{target}.part"

        def save(response: http.client.HTTPResponse) -> None:
            # A failure to write is the disk's, not the network's: raised as is, never retried.
            try:
                out = open(partial, "wb")
            except OSError as error:
                raise MediaCreditsError(f"cannot write {partial}: {error}") from error
            with out:
                while True:
                    chunk = response.read(CHUNK_BYTES)
                    if not chunk:
                        break
                    try:
                        out.write(chunk)
                    except OSError as error:
                        raise MediaCreditsError(f"cannot write {partial}: {error}") from error
            expected = response.getheader("content-length")
            if expected is not None and os.path.getsize(partial) != int(expected):
                raise http.client.IncompleteRead(b"", int(expected) - os.path.getsize(partial))

        try:
            self._exchange(
                "GET",
                str(result["url"]),
                body=None,
                repeatable=True,
                auth=False,
                read=save,
                timeout=max(self.timeout, 600.0),
            )
            os.replace(partial, target)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
        return target

    # --- account, webhooks, voices -----------------------------------------------------------------

    def account(self) -> Json:
        """``{balance, email, ...}`` of the key's account."""
        return self._op("getAccount")

    def get_webhook(self) -> Json:
        """The account's default webhook: ``{url, secret, secretVersion}`` (of the key's mode)."""
        return self._op("getAccountWebhook")

    def set_webhook(self, url: str) -> Json:
        """Sets the URL every job of the account notifies unless the call gives ``webhook_url``."""
        return self._op("setAccountWebhook", json_body={"url": url})

    def delete_webhook(self) -> Json:
        return self._op("deleteAccountWebhook")

    def rotate_webhook_secret(self) -> Json:
        """A new secret; for 24 hours deliveries carry signatures of the new and the previous one."""
        return self._op("rotateWebhookSecret")

    def get_cloned_voice(self) -> Json:
        return self._op("getClonedVoice")

    def clone_voice(self, upload_id: str) -> Json:
        """Registers (or replaces) the account's voice from 10 s or more of speech; free."""
        return self._op("registerClonedVoice", json_body={"uploadId": upload_id}, timeout=max(self.timeout, 600.0))

    def delete_cloned_voice(self) -> Json:
        return self._op("deleteClonedVoice")

    # --- brands and posts (free; live keys only) -----------------------------------------------------

    def list_brands(self) -> Json:
        return self._op("listBrands")

    def create_brand(self, name: str, time_zone: str, **fields: Any) -> Json:
        """Fields: ``channels``, ``requires_approval``, ``webhook_url`` (docs/social.md)."""
        return self._op("createBrand", json_body=_body_fields({"name": name, "time_zone": time_zone, **fields}))

    def get_brand(self, brand_id: str) -> Json:
        return self._op("getBrand", {"brandId": brand_id})

    def update_brand(self, brand_id: str, **fields: Any) -> Json:
        return self._op("updateBrand", {"brandId": brand_id}, json_body=_body_fields(fields))

    def delete_brand(self, brand_id: str) -> Json:
        return self._op("deleteBrand", {"brandId": brand_id})

    def brand_stats(self, brand_id: str, *, from_: Optional[str] = None, to: Optional[str] = None) -> Json:
        """Statistics of the brand's posts, between the dates ``from_`` and ``to`` if given."""
        return self._op("getBrandStats", {"brandId": brand_id}, query={"from": from_, "to": to})

    def list_posts(self, *, brand_id: Optional[str] = None, state: Optional[str] = None) -> Json:
        return self._op("listPosts", query={"brandId": brand_id, "state": state})

    def create_post(self, brand_id: str, text: str, **fields: Any) -> Json:
        """Fields: ``media``, ``networks``, ``scheduled_at``."""
        return self._op("createPost", json_body=_body_fields({"brand_id": brand_id, "text": text, **fields}))

    def get_post(self, post_id: str) -> Json:
        return self._op("getPost", {"postId": post_id})

    def update_post(self, post_id: str, **fields: Any) -> Json:
        return self._op("updatePost", {"postId": post_id}, json_body=_body_fields(fields))

    def delete_post(self, post_id: str) -> Json:
        return self._op("deletePost", {"postId": post_id})

    def comment_on_post(self, post_id: str, text: str, timecode: Optional[str] = None) -> Json:
        """Adds the owner's comment to the post's review thread, at ``timecode`` ("00:12") or on the whole post."""
        return self._op(
            "commentOnPost", {"postId": post_id}, json_body=_body_fields({"text": text, "timecode": timecode})
        )

    def post_media(self, post_id: str) -> Json:
        return self._op("getPostMedia", {"postId": post_id})

    def change_post_state(self, post_id: str, action: str, *, scheduled_at: Optional[str] = None) -> Json:
        """``action``: submit, schedule (with ``scheduled_at``), unschedule or cancel."""
        return self._op(
            "changePostState",
            {"postId": post_id, "action": action},
            json_body=_body_fields({"scheduled_at": scheduled_at}),
        )

    def create_approval_link(self, post_id: str) -> Json:
        return self._op("createApprovalLink", {"postId": post_id})

    def revoke_approval_link(self, link_id: str) -> Json:
        return self._op("revokeApprovalLink", {"linkId": link_id})

    # --- the document ------------------------------------------------------------------------------

    def openapi(self) -> Json:
        """The API's OpenAPI document (public, no key)."""
        return self._exchange("GET", f"{_V1}/openapi.json", repeatable=True, auth=False)


def _read_json(response: http.client.HTTPResponse) -> Any:
    raw = response.read()
    return json.loads(raw.decode("utf-8")) if raw else None


def _retry_after(response: http.client.HTTPResponse) -> float:
    """Seconds a 429 asks to wait (Retry-After in seconds), 10 when it does not say; a minute at most."""
    try:
        return max(0.0, min(60.0, float(response.getheader("retry-after") or "10")))
    except ValueError:
        return 10.0


# --- webhooks ----------------------------------------------------------------------------------------


def _secret_key(secret: str) -> bytes:
    encoded = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error as error:
        raise WebhookVerificationError("the secret is not whsec_ followed by base64") from error


def verify_webhook(
    secret: Union[str, Sequence[str]],
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    tolerance: float = WEBHOOK_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> Json:
    """Verifies a job webhook (Standard Webhooks) and returns its event, parsed.

    ``headers`` is any mapping (names in any case): ``webhook-id``, ``webhook-timestamp`` (unix
    seconds, within ``tolerance`` of now) and ``webhook-signature``, space-separated
    ``v1,<base64 HMAC-SHA256>`` of ``"{id}.{timestamp}.{body}"`` keyed with the base64 part of the
    ``whsec_`` secret. ``body`` must be the raw body as received, not re-serialised JSON.
    ``secret`` may be a list (both secrets while a rotation is under way). Raises
    WebhookVerificationError when anything does not match.
    """
    lower = {name.lower(): value for name, value in headers.items()}
    message_id = lower.get("webhook-id")
    timestamp = lower.get("webhook-timestamp")
    signatures = lower.get("webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    if not re.fullmatch(r"\d{1,12}", timestamp):
        raise WebhookVerificationError(f"webhook-timestamp is not unix seconds: {timestamp!r}")
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance (a replay, or a wrong clock)")
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    signed = f"{message_id}.{timestamp}.".encode("utf-8") + raw
    secrets = [secret] if isinstance(secret, str) else list(secret)
    expected = [hmac.new(_secret_key(one), signed, hashlib.sha256).digest() for one in secrets]
    for signature in signatures.split():
        version, _, encoded = signature.partition(",")
        if version != "v1":
            continue
        try:
            given = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            continue
        if any(hmac.compare_digest(given, digest) for digest in expected):
            return json.loads(raw.decode("utf-8"))
    raise WebhookVerificationError("no signature matches the body with this secret")
