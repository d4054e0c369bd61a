"""What the sync and async clients share: configuration, the request of every method, how an
answer becomes a value or an exception, when to retry, and how an event stream resumes.
The clients themselves only send (quarry/_sync.py, quarry/_async.py)."""
import json
import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union
from urllib.parse import quote

import httpx

from ._catalogue import ERROR_CLASSES
from ._exceptions import QuarryConnectionError, QuarryError

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 60.0
#: Reconnects in a row without a new event before a stream gives up.
STREAM_RECONNECTS = 5
#: Rows per request when iterating rows.
ROW_PAGE = 1000
#: The distribution's version (as in pyproject.toml).
VERSION = "1.2.0"
USER_AGENT = f"quarry-client-python/{VERSION}"

Params = Dict[str, Union[str, int, float, bool]]


@dataclass
class Config:
    base_url: str
    api_key: Optional[str]
    timeout: float
    max_retries: int


def config(base_url: Optional[str], api_key: Optional[str], timeout: float, max_retries: int) -> Config:
    url = base_url or os.environ.get("QUARRY_URL") or DEFAULT_URL
    return Config(url.rstrip("/"), api_key or os.environ.get("QUARRY_API_KEY") or None, timeout, max_retries)


def headers(cfg: Config) -> Dict[str, str]:
    out = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if cfg.api_key:
        out["Authorization"] = f"Bearer {cfg.api_key}"
    return out


@dataclass
class Call:
    """One request: sent again after a retryable failure only when ``resendable``."""

    method: str
    path: str
    json: Optional[Any] = None
    params: Params = field(default_factory=dict)
    headers: Dict[str, str] = field(default_factory=dict)
    content: Optional[bytes] = None
    resendable: bool = True


def seg(value: str) -> str:
    return quote(value, safe="")


def params(**values: Any) -> Params:
    return {k: v for k, v in values.items() if v is not None}


def idempotent(method: str, path: str, body: Optional[Dict[str, Any]], key: Optional[str]) -> Call:
    """A write that changes state once: its Idempotency-Key (the caller's, else a fresh one) makes resending it safe."""
    return Call(method, path, json=body, headers={"Idempotency-Key": key or f"py-{uuid.uuid4()}"})


def body(**values: Any) -> Dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# ---- answers -------------------------------------------------------------------------------------


def error_from(response: httpx.Response) -> QuarryError:
    """The exception for an error answer: the subclass of its code, with the body's fields."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("error"), str):
        data = {"error": "internal_error" if response.status_code >= 500 else "invalid_request",
                "message": f"HTTP {response.status_code}: {response.text[:200]}", "retryable": response.status_code >= 500}
    retry_after: Optional[float] = data.get("retry_after")
    if retry_after is None and response.headers.get("Retry-After", "").isdigit():
        retry_after = float(response.headers["Retry-After"])
    cls = ERROR_CLASSES.get(data["error"], QuarryError)
    return cls(
        str(data.get("message", "")),
        code=data["error"],
        status=response.status_code,
        retryable=bool(data.get("retryable", False)),
        request_id=data.get("request_id") or response.headers.get("X-Request-ID"),
        retry_after=retry_after,
        param=data.get("param"),
        body=data,
    )


def connection_error(exc: Exception) -> QuarryConnectionError:
    return QuarryConnectionError(f"{type(exc).__name__}: {exc}", code="connection_error")


def retry_delay(error: QuarryError, attempt: int) -> float:
    """Seconds before resending: the server's ``retry_after`` in full (plus a little jitter so a
    crowd does not return at once), else an exponential backoff from 0.5 s, at most 8 s."""
    if error.retry_after is not None and error.retry_after >= 0:
        return error.retry_after + random.random() * min(1.0, error.retry_after * 0.1)
    return min(8.0, 0.5 * 2.0 ** attempt) * (1 - random.random() * 0.25)


def should_retry(error: QuarryError, call: Call, attempt: int, max_retries: int) -> bool:
    if attempt >= max_retries:
        return False
    # An error answer means the server did nothing; a lost answer is only resent where that is safe.
    return error.retryable and (call.resendable or not isinstance(error, QuarryConnectionError))


def next_cursor(response: httpx.Response) -> Optional[str]:
    return response.headers.get("X-Next-Cursor") or None


# ---- event streams -------------------------------------------------------------------------------


@dataclass
class Frame:
    event: str = "message"
    data: str = ""
    id: Optional[str] = None


class SSEDecoder:
    """Server-sent event frames from lines (comments such as ``: ping`` are dropped)."""

    def __init__(self) -> None:
        self._frame = Frame()
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[Frame]:
        line = line.rstrip("\r\n")
        if line == "":
            if not self._data:
                self._frame = Frame()
                return None
            frame, self._frame = self._frame, Frame()
            frame.data, self._data = "\n".join(self._data), []
            return frame
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._frame.event = value
        elif name == "id":
            self._frame.id = value
        return None


class StreamCursor:
    """Where a resumable stream stands: the last stored event handed out, and whether it is over.

    Each connection opens with :meth:`call`, feeds its frames to :meth:`feed` (which says what to
    hand out) and, when it ends, :meth:`connection_ended` says whether to reconnect. Events come
    out once each, in order: a replay after ``Last-Event-ID`` never repeats one.
    """

    def __init__(self, path: str, after: Optional[int]) -> None:
        self.path = path
        self.after = after
        self.last_seq: Optional[int] = None
        self.finished = False
        self._done_seen = False
        self._connections = 0
        self._idle_reconnects = 0
        self._resumed = False
        self._saw_done = False
        self._refusal: Optional[Dict[str, Any]] = None

    def call(self) -> Call:
        """The request of the next connection: ``?after=`` first (an idle task then answers its
        snapshot and ``done``), ``Last-Event-ID`` on a reconnect."""
        self._resumed = self._connections > 0
        self._connections += 1
        self._saw_done = False
        self._refusal = None
        hdrs = {"Accept": "text/event-stream"}
        if self._resumed and self.last_seq is not None:
            hdrs["Last-Event-ID"] = str(self.last_seq)
            return Call("GET", self.path, headers=hdrs)
        return Call("GET", self.path, headers=hdrs, params=params(after=self.after))

    def feed(self, frame: Frame) -> Optional[Dict[str, Any]]:
        """The event to hand out for ``frame``, if any; raises the error a refusal carries."""
        try:
            data = json.loads(frame.data)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        data.setdefault("type", frame.event)
        if frame.id is not None and frame.id.isdigit():
            seq = int(frame.id)
            if self.last_seq is not None and seq <= self.last_seq:
                return None
            self.last_seq = seq
            self._idle_reconnects = 0
            if data["type"] == "done":
                self._saw_done = self._done_seen = True
            return data
        # Unstored frames: a refusal (error, then done refused), or an idle task's snapshot and done.
        if data["type"] == "error":
            self._refusal = data
            return None
        if data["type"] == "done":
            if data.get("outcome") == "refused":
                refusal = self._refusal or {"error": "invalid_request", "message": "The request was refused inside its stream."}
                cls = ERROR_CLASSES.get(str(refusal.get("error")), QuarryError)
                raise cls(str(refusal.get("message", "")), code=str(refusal.get("error")), retryable=bool(refusal.get("retryable", False)))
            self._saw_done = True
        # After a replay that ended with a stored ``done`` (a reconnect, or ``after=``), the idle
        # snapshot only restates what the replay already ended with.
        return None if self._done_seen else data

    def connection_ended(self) -> bool:
        """True when the stream is over (its connection ended after a ``done``); False: reconnect.
        Raises once too many reconnects in a row brought nothing new."""
        if self._saw_done:
            self.finished = True
            return True
        self._idle_reconnects += 1
        if self._idle_reconnects > STREAM_RECONNECTS:
            raise QuarryConnectionError(f"The stream of {self.path} dropped {STREAM_RECONNECTS} times in a row without a new event.",
                                        code="connection_error")
        return False

    def no_content(self) -> None:
        """A 204: nothing to follow."""
        self.finished = True

    def reconnect_delay(self) -> float:
        return min(4.0, 0.25 * 2.0 ** max(0, self._idle_reconnects - 1))


# ---- the requests of each method -----------------------------------------------------------------


def task_create(prompt: Optional[str], spec: Optional[Mapping[str, Any]], task_id: Optional[str], idempotency_key: Optional[str],
                extra: Mapping[str, Any]) -> Call:
    if (prompt is None) == (spec is None):
        raise TypeError("tasks.create() takes prompt= or spec=, exactly one of them")
    if spec is not None:
        return idempotent("POST", "/task/start", body(task=dict(spec), task_id=task_id, **extra), idempotency_key)
    return idempotent("POST", "/task", body(prompt=prompt, task_id=task_id, **extra), idempotency_key)


def output_path(task_id: str, output: Optional[str]) -> str:
    return f"/task/{seg(task_id)}/output" if output is None else f"/task/{seg(task_id)}/outputs/{seg(output)}"


def inputs_format(path: str, content_type: Optional[str]) -> str:
    if content_type:
        return content_type
    lower = path.lower()
    if lower.endswith(".csv"):
        return "text/csv"
    if lower.endswith((".jsonl", ".ndjson")):
        return "application/x-ndjson"
    raise ValueError(f"Cannot tell whether {path} is CSV or JSON Lines: name it .csv or .jsonl, or pass content_type=.")


def group_create(spec: Mapping[str, Any], inputs: Optional[Iterable[Mapping[str, Any]]], upload_id: Optional[str], name: Optional[str],
                 max_parallel: Optional[int], max_credits: Optional[float], idempotency_key: Optional[str]) -> Call:
    return idempotent("POST", "/group", body(task=dict(spec), inputs=None if inputs is None else [dict(i) for i in inputs],
                                              input_upload_id=upload_id, name=name, max_parallel=max_parallel,
                                              max_credits=max_credits), idempotency_key)


def group_retry(group_id: str, include: Optional[Iterable[str]], max_credits: Optional[float]) -> Call:
    # Not resent after a lost answer: the runs it started may have failed again by then.
    return Call("POST", f"/group/{seg(group_id)}/retry", json=body(include=None if include is None else list(include), max_credits=max_credits),
                resendable=False)


def runs_query(status: Optional[str]) -> Dict[str, Any]:
    return {"status": status, "limit": 1000}


def changes_query(since: Optional[str], after: Optional[str]) -> Dict[str, Any]:
    return {"since": since, "after": after, "limit": 1000}


def check_inputs(inputs: Optional[Iterable[Mapping[str, Any]]], inputs_file: Optional[str]) -> None:
    if (inputs is None) == (inputs_file is None):
        raise TypeError("groups.create() takes inputs= or inputs_file=, exactly one of them")
