"""``Quarry``: the blocking client."""
import os
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Type, cast

import httpx

from . import _core
from ._core import Call, StreamCursor, seg
from ._exceptions import QuarryConnectionError, QuarryError
from .types import (Group, GroupDetail, GroupEvent, GroupRowChange, GroupRun, OwnAccount, RecheckResult, RowChange, SourceInfo, Task, TaskDetail,
                    TaskEvent, TaskState, Webhook, WebhookDelivery, WebhookDeliveryDetail, WebhookWithSecret)


class _Transport:
    """Sends calls, retrying retryable failures, and turns error answers into exceptions."""

    def __init__(self, cfg: _core.Config, transport: Optional[httpx.BaseTransport]) -> None:
        self.cfg = cfg
        self.http = httpx.Client(base_url=cfg.base_url, timeout=cfg.timeout, headers=_core.headers(cfg), transport=transport)

    def _open(self, call: Call, stream: bool) -> httpx.Response:
        attempt = 0
        while True:
            # No params at all rather than empty ones: httpx 0.28 would drop a signed URL's own query.
            request = self.http.build_request(call.method, call.path, json=call.json, params=call.params or None, headers=call.headers, content=call.content)
            if call.path.startswith(("http://", "https://")):
                request.headers.pop("Authorization", None)  # a signed URL is its own credential
            error: QuarryError
            try:
                response = self.http.send(request, stream=stream)
            except httpx.TransportError as exc:
                error = _core.connection_error(exc)
            else:
                if response.status_code < 400:
                    return response
                response.read()
                response.close()
                error = _core.error_from(response)
            if not _core.should_retry(error, call, attempt, self.cfg.max_retries):
                raise error
            time.sleep(_core.retry_delay(error, attempt))
            attempt += 1

    def send(self, call: Call) -> httpx.Response:
        return self._open(call, stream=False)

    def json(self, call: Call) -> Any:
        return self.send(call).json()

    def cursor_pages(self, path: str, query: Dict[str, Any], key: Optional[str]) -> Iterator[Any]:
        """Every item of a list paged by ``X-Next-Cursor``: the answer itself, or its ``key``."""
        cursor = query.pop("cursor", None)
        while True:
            response = self.send(Call("GET", path, params=_core.params(**query, cursor=cursor)))
            data = response.json()
            yield from data if key is None else data[key]
            cursor = _core.next_cursor(response)
            if cursor is None:
                return

    def offset_pages(self, path: str, key: str, query: Dict[str, Any], limit: int) -> Iterator[Any]:
        """Every item of a list paged by ``offset`` and ``limit``, until ``total``."""
        offset = 0
        while True:
            data = self.json(Call("GET", path, params=_core.params(**query, limit=limit, offset=offset)))
            items = data[key]
            yield from items
            offset += len(items)
            if not items or offset >= data["total"]:
                return

    def events(self, cursor: StreamCursor) -> Iterator[Dict[str, Any]]:
        while not cursor.finished:
            try:
                response = self._open(cursor.call(), stream=True)
            except QuarryConnectionError:
                if cursor.connection_ended():
                    return
                time.sleep(cursor.reconnect_delay())
                continue
            if response.status_code == 204:
                response.close()
                cursor.no_content()
                return
            decoder = _core.SSEDecoder()
            try:
                for line in response.iter_lines():
                    frame = decoder.feed(line)
                    event = cursor.feed(frame) if frame else None
                    if event is not None:
                        yield event
            except httpx.TransportError:
                pass  # dropped: resumed below from the last event handed out
            finally:
                response.close()
            if cursor.connection_ended():
                return
            time.sleep(cursor.reconnect_delay())

    def download(self, call: Call, path: str) -> str:
        response = self._open(call, stream=True)
        try:
            with open(path, "wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return path

    def upload(self, file: str, content_type: Optional[str]) -> str:
        """POSTs /upload-url for ``file``, PUTs the file there, and returns the upload id."""
        kind = _core.inputs_format(file, content_type)
        with open(file, "rb") as f:
            data = f.read()
        ticket = self.json(Call("POST", "/upload-url", json={"filename": os.path.basename(file), "content_type": kind, "size_bytes": len(data)}))
        self.json(Call(ticket.get("method", "PUT"), ticket["upload_url"], headers=dict(ticket.get("headers", {})), content=data))
        return cast(str, ticket["upload_id"])


class Tasks:
    """The task routes, as ``client.tasks``."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def create(self, prompt: Optional[str] = None, *, spec: Optional[Mapping[str, Any]] = None, task_id: Optional[str] = None,
               idempotency_key: Optional[str] = None, plan_only: Optional[bool] = None) -> Task:
        """Starts a task from a ``prompt`` (``POST /task``) or a ``spec`` (``POST /task/start``).

        ``task_id`` names the task yourself (1-64 chars of ``A-Z a-z 0-9 _ . : -``); with a
        ``task_id`` that exists, a prompt is a message to it. ``idempotency_key`` (else a fresh
        one per call, so retries never start two tasks) replays the first answer for 24 h.

        >>> task = client.tasks.create(prompt="EU plants making Li-ion cells")  # doctest: +SKIP
        """
        return cast(Task, self._t.json(_core.task_create(prompt, spec, task_id, idempotency_key, _core.body(plan_only=plan_only))))

    def get(self, task_id: str, *, wait: Optional[int] = None) -> TaskDetail:
        """``GET /task/{task_id}``: the task, its spec and its last 100 events (``wait``: up to 60 s for the turn to end)."""
        return cast(TaskDetail, self._t.json(Call("GET", f"/task/{seg(task_id)}", params=_core.params(wait=wait))))

    def state(self, task_id: str, *, wait: Optional[int] = None) -> TaskState:
        """``GET /task/{task_id}/state``: the cheap poll (``active`` is true while a turn runs)."""
        return cast(TaskState, self._t.json(Call("GET", f"/task/{seg(task_id)}/state", params=_core.params(wait=wait))))

    def list(self, **filters: Any) -> Iterator[Task]:
        """Every task, pinned first then most recently updated, fetched page by page as you iterate.

        Filters as ``GET /task`` takes them: ``q`` (text in the name or the prompt, ignoring
        case), ``state`` (``running`` or ``idle``), ``outcome`` (the last turn's: ``completed``,
        ``failed``, ``stopped``), ``created_after`` and ``created_before`` (ISO 8601), ``limit``
        (page size, 1-200), ``group_id`` (that group's runs), ``cursor`` (start there).

        >>> for task in client.tasks.list(limit=100): print(task["task_id"])  # doctest: +SKIP
        """
        return self._t.cursor_pages("/task", dict(filters), None)

    def continue_(self, task_id: str, message: str, *, offline: Optional[bool] = None, idempotency_key: Optional[str] = None) -> Task:
        """``POST /task/{task_id}/continue``: sends a message; it runs now when the task is idle,
        else it is queued (``status`` is then ``accepted``). ``offline=True``: that turn runs
        against the evidence the task already has (no web search, pages only from its snapshots)."""
        return cast(Task, self._t.json(_core.idempotent("POST", f"/task/{seg(task_id)}/continue", _core.body(message=message, offline=offline),
                                                        idempotency_key)))

    def execute(self, task_id: str, instruction: Optional[str] = None, *, offline: Optional[bool] = None,
                idempotency_key: Optional[str] = None) -> Task:
        """``POST /task/{task_id}/execute``: runs the current spec again (refused with
        ``TaskExecuting`` while a turn runs); ``offline=True`` as in :meth:`continue_`."""
        return cast(Task, self._t.json(_core.idempotent("POST", f"/task/{seg(task_id)}/execute", _core.body(instruction=instruction, offline=offline),
                                                        idempotency_key)))

    def stop(self, task_id: str, *, clear_queue: Optional[bool] = None) -> Task:
        """``POST /task/{task_id}/stop``: stops the running turn; rows written are kept."""
        return cast(Task, self._t.json(Call("POST", f"/task/{seg(task_id)}/stop", json=_core.body(clear_queue=clear_queue))))

    def stream(self, task_id: str, after: Optional[int] = None) -> Iterator[TaskEvent]:
        """The task's events as they happen (``task``, ``tool``, ``text``, ``error``, ``done``).

        It follows the task until no turn runs and nothing is queued, and ends after that
        ``done``. A dropped connection is resumed with ``Last-Event-ID``: no event is lost or
        repeated. ``after`` replays the stored events after that ``seq`` first.

        >>> for event in client.tasks.stream(task["task_id"]):  # doctest: +SKIP
        ...     if event["type"] == "done": print(event["outcome"])
        """
        return cast(Iterator[TaskEvent], self._t.events(StreamCursor(f"/task/{seg(task_id)}/stream", after)))

    def rows(self, task_id: str, output: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Every row of the active output (or of ``output``), page by page: the columns plus
        ``_row``, ``_sources`` and ``_basis`` (a ``quarry.types.Row``)."""
        return self._t.offset_pages(_core.output_path(task_id, output), "rows", {}, _core.ROW_PAGE)

    def export(self, task_id: str, path: str, format: str = "csv", output: Optional[str] = None) -> str:
        """Writes the whole output to ``path`` as ``csv`` or ``jsonl`` (JSON Lines); returns ``path``."""
        return self._t.download(Call("GET", _core.output_path(task_id, output), params={"format": format}), path)

    def sources(self, task_id: str) -> Iterator[SourceInfo]:
        """Every page and input the task read, kept as snapshots for checking citations."""
        return self._t.offset_pages(f"/task/{seg(task_id)}/sources", "sources", {}, 200)

    def recheck(self, task_id: str) -> RecheckResult:
        """``POST /task/{task_id}/recheck``: checks every row's sources and cells again against the
        stored snapshots (nothing is fetched); ``{rows, changed}``."""
        return cast(RecheckResult, self._t.json(Call("POST", f"/task/{seg(task_id)}/recheck", json={})))

    def changes(self, task_id: str, since: Optional[str] = None, after: Optional[str] = None) -> Iterator[RowChange]:
        """What the task's turns changed in its keyed table outputs, oldest first, page by page:
        after the turn ``since`` (a turn id) or the time ``after`` (ISO 8601)."""
        return self._t.cursor_pages(f"/task/{seg(task_id)}/changes", _core.changes_query(since, after), "changes")


class Groups:
    """The task group routes, as ``client.groups``: one spec run over many inputs."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def create(self, spec: Mapping[str, Any], *, inputs: Optional[Iterable[Mapping[str, Any]]] = None, inputs_file: Optional[str] = None,
               content_type: Optional[str] = None, name: Optional[str] = None, max_parallel: Optional[int] = None,
               max_credits: Optional[float] = None, idempotency_key: Optional[str] = None) -> GroupDetail:
        """``POST /group``: runs ``spec`` (with ``input_columns`` and one table output) once per input.

        Give ``inputs`` (at most 1,000 dicts) or ``inputs_file``, a CSV (header row) or JSON Lines
        file of any size: it is uploaded first (``POST /upload-url``, then ``PUT``). Its format is
        read from its name (``.csv``, ``.jsonl``) unless ``content_type`` says it.
        """
        _core.check_inputs(inputs, inputs_file)
        upload_id = self._t.upload(inputs_file, content_type) if inputs_file is not None else None
        return cast(GroupDetail, self._t.json(_core.group_create(spec, inputs, upload_id, name, max_parallel, max_credits, idempotency_key)))

    def get(self, group_id: str) -> GroupDetail:
        """``GET /group/{group_id}``: status, counts by run status, and spec."""
        return cast(GroupDetail, self._t.json(Call("GET", f"/group/{seg(group_id)}")))

    def list(self, **filters: Any) -> Iterator[Group]:
        """Every group, newest first, page by page (``limit``: page size, ``cursor``: start there)."""
        return self._t.cursor_pages("/group", dict(filters), None)

    def stream(self, group_id: str, after: Optional[int] = None) -> Iterator[GroupEvent]:
        """The group's events (``run``, ``group``, ``done``) until no run is pending or running;
        resumed with ``Last-Event-ID`` when the connection drops."""
        return cast(Iterator[GroupEvent], self._t.events(StreamCursor(f"/group/{seg(group_id)}/stream", after)))

    def rows(self, group_id: str) -> Iterator[Dict[str, Any]]:
        """Every merged row: ``_input`` (the input's index), the input's fields, the output's
        columns, ``_sources``, ``_run`` (a ``quarry.types.GroupRow``)."""
        return self._t.offset_pages(f"/group/{seg(group_id)}/rows", "rows", {}, _core.ROW_PAGE)

    def runs(self, group_id: str, status: Optional[str] = None) -> Iterator[GroupRun]:
        """Every run of the group in input order, rows or not (``GET /group/{group_id}/runs``):
        its input, ``status``, ``error`` and ``credits_used``; ``status`` keeps only runs in that
        one (``pending``, ``running``, ``completed``, ``failed``, ``stopped``)."""
        return self._t.cursor_pages(f"/group/{seg(group_id)}/runs", _core.runs_query(status), "runs")

    def changes(self, group_id: str, since: Optional[str] = None, after: Optional[str] = None) -> Iterator[GroupRowChange]:
        """What the runs' turns changed in their keyed outputs, each with the run's ``task_id``,
        ``_input`` and ``input``, page by page (``since``: a turn id, ``after``: an ISO time)."""
        return self._t.cursor_pages(f"/group/{seg(group_id)}/changes", _core.changes_query(since, after), "changes")

    def stop(self, group_id: str) -> GroupDetail:
        """Stops every run: pending ones become stopped, running ones are stopped."""
        return cast(GroupDetail, self._t.json(Call("POST", f"/group/{seg(group_id)}/stop", json={})))

    def retry(self, group_id: str, include: Optional[Iterable[str]] = None, max_credits: Optional[float] = None) -> GroupDetail:
        """Runs the failed inputs again, each as a new run; ``include=["failed", "stopped"]``
        runs the stopped ones again too. ``max_credits`` sets the group's cap anew."""
        return cast(GroupDetail, self._t.json(_core.group_retry(group_id, include, max_credits)))


class Webhooks:
    """The webhook endpoint routes, as ``client.webhooks``."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def create(self, url: str, events: List[str], description: Optional[str] = None) -> WebhookWithSecret:
        """Registers an endpoint for ``events`` (e.g. ``["task.turn_completed"]``); its ``secret``
        (for :func:`quarry.verify_webhook`) is in this answer only."""
        return cast(WebhookWithSecret, self._t.json(Call("POST", "/webhooks", json=_core.body(url=url, events=events, description=description),
                                                          resendable=False)))

    def list(self) -> List[Webhook]:
        """The account's endpoints, newest first (never their secrets)."""
        return cast(List[Webhook], self._t.json(Call("GET", "/webhooks"))["webhooks"])

    def delete(self, webhook_id: str) -> Webhook:
        """Deletes an endpoint and its deliveries; nothing more is sent to it."""
        return cast(Webhook, self._t.json(Call("DELETE", f"/webhooks/{seg(webhook_id)}")))

    def deliveries(self, webhook_id: str, **filters: Any) -> Iterator[WebhookDelivery]:
        """Every delivery to the endpoint, newest first, page by page (``limit``, ``cursor``)."""
        return self._t.cursor_pages(f"/webhooks/{seg(webhook_id)}/deliveries", dict(filters), "deliveries")

    def delivery(self, webhook_id: str, delivery_id: str) -> WebhookDeliveryDetail:
        """One delivery with its ``payload`` and ``attempts`` (each answer's status, error, duration
        and first 2 KiB)."""
        return cast(WebhookDeliveryDetail, self._t.json(Call("GET", f"/webhooks/{seg(webhook_id)}/deliveries/{seg(delivery_id)}")))


class Quarry:
    """A client for one Quarry service.

    ``base_url`` defaults to ``QUARRY_URL`` (else ``http://127.0.0.1:8080``), ``api_key`` to
    ``QUARRY_API_KEY``. ``timeout`` is seconds per request; retryable failures (429, 503, a
    dropped connection, ...) are retried up to ``max_retries`` times, after the server's
    ``retry_after`` when it names one. ``transport`` is an ``httpx`` transport (for tests and
    proxies). Use it as a context manager, or call :meth:`close`.

    The routes are grouped as ``client.tasks`` (:class:`Tasks`), ``client.groups``
    (:class:`Groups`) and ``client.webhooks`` (:class:`Webhooks`); :meth:`account` reads the account.

    >>> with Quarry() as client:  # doctest: +SKIP
    ...     task = client.tasks.create(prompt="EU plants making Li-ion cells")
    """

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, timeout: float = _core.DEFAULT_TIMEOUT,
                 max_retries: int = 2, *, transport: Optional[httpx.BaseTransport] = None) -> None:
        cfg = _core.config(base_url, api_key, timeout, max_retries)
        self.base_url = cfg.base_url
        self._transport = _Transport(cfg, transport)
        self.tasks = Tasks(self._transport)
        self.groups = Groups(self._transport)
        self.webhooks = Webhooks(self._transport)

    def account(self) -> OwnAccount:
        """``GET /account``: the API key's account, its ``balance`` and ``credits_used``."""
        return cast(OwnAccount, self._transport.json(Call("GET", "/account")))

    def close(self) -> None:
        """Closes the connections."""
        self._transport.http.close()

    def __enter__(self) -> "Quarry":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Any) -> None:
        self.close()
