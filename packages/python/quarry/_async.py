"""``AsyncQuarry``: the client for asyncio, with ``Quarry``'s methods as coroutines and async iterators."""
import asyncio
import os
from typing import Any, AsyncIterator, Dict, Iterable, List, Mapping, Optional, Type, cast

import httpx

from . import _core
from ._core import Call, StreamCursor, seg
from ._exceptions import QuarryConnectionError, QuarryError
from .types import (Group, GroupDetail, GroupEvent, GroupRowChange, GroupRun, OwnAccount, RecheckResult, RowChange, SourceInfo, Task, TaskDetail,
                    TaskEvent, TaskState, Webhook, WebhookDelivery, WebhookDeliveryDetail, WebhookWithSecret)


class _AsyncTransport:
    """As the blocking client's transport (quarry/_sync.py), awaiting."""

    def __init__(self, cfg: _core.Config, transport: Optional[httpx.AsyncBaseTransport]) -> None:
        self.cfg = cfg
        self.http = httpx.AsyncClient(base_url=cfg.base_url, timeout=cfg.timeout, headers=_core.headers(cfg), transport=transport)

    async def _open(self, call: Call, stream: bool) -> httpx.Response:
        attempt = 0
        while True:
            # No params at all rather than empty ones: httpx 0.28 would drop a signed URL's own query.
            request = self.http.build_request(call.method, call.path, json=call.json, params=call.params or None, headers=call.headers, content=call.content)
            if call.path.startswith(("http://", "https://")):
                request.headers.pop("Authorization", None)  # a signed URL is its own credential
            error: QuarryError
            try:
                response = await self.http.send(request, stream=stream)
            except httpx.TransportError as exc:
                error = _core.connection_error(exc)
            else:
                if response.status_code < 400:
                    return response
                await response.aread()
                await response.aclose()
                error = _core.error_from(response)
            if not _core.should_retry(error, call, attempt, self.cfg.max_retries):
                raise error
            await asyncio.sleep(_core.retry_delay(error, attempt))
            attempt += 1

    async def send(self, call: Call) -> httpx.Response:
        return await self._open(call, stream=False)

    async def json(self, call: Call) -> Any:
        return (await self.send(call)).json()

    async def cursor_pages(self, path: str, query: Dict[str, Any], key: Optional[str]) -> AsyncIterator[Any]:
        cursor = query.pop("cursor", None)
        while True:
            response = await self.send(Call("GET", path, params=_core.params(**query, cursor=cursor)))
            data = response.json()
            for item in data if key is None else data[key]:
                yield item
            cursor = _core.next_cursor(response)
            if cursor is None:
                return

    async def offset_pages(self, path: str, key: str, query: Dict[str, Any], limit: int) -> AsyncIterator[Any]:
        offset = 0
        while True:
            data = await self.json(Call("GET", path, params=_core.params(**query, limit=limit, offset=offset)))
            items = data[key]
            for item in items:
                yield item
            offset += len(items)
            if not items or offset >= data["total"]:
                return

    async def events(self, cursor: StreamCursor) -> AsyncIterator[Dict[str, Any]]:
        while not cursor.finished:
            try:
                response = await self._open(cursor.call(), stream=True)
            except QuarryConnectionError:
                if cursor.connection_ended():
                    return
                await asyncio.sleep(cursor.reconnect_delay())
                continue
            if response.status_code == 204:
                await response.aclose()
                cursor.no_content()
                return
            decoder = _core.SSEDecoder()
            try:
                async for line in response.aiter_lines():
                    frame = decoder.feed(line)
                    event = cursor.feed(frame) if frame else None
                    if event is not None:
                        yield event
            except httpx.TransportError:
                pass  # dropped: resumed below from the last event handed out
            finally:
                await response.aclose()
            if cursor.connection_ended():
                return
            await asyncio.sleep(cursor.reconnect_delay())

    async def download(self, call: Call, path: str) -> str:
        response = await self._open(call, stream=True)
        try:
            with open(path, "wb") as out:
                async for chunk in response.aiter_bytes():
                    out.write(chunk)
        finally:
            await response.aclose()
        return path

    async def upload(self, file: str, content_type: Optional[str]) -> str:
        kind = _core.inputs_format(file, content_type)
        with open(file, "rb") as f:
            data = f.read()
        ticket = await self.json(Call("POST", "/upload-url", json={"filename": os.path.basename(file), "content_type": kind, "size_bytes": len(data)}))
        await self.json(Call(ticket.get("method", "PUT"), ticket["upload_url"], headers=dict(ticket.get("headers", {})), content=data))
        return cast(str, ticket["upload_id"])


class AsyncTasks:
    """``client.tasks`` of :class:`AsyncQuarry`: as :class:`quarry.Quarry`'s, awaited."""

    def __init__(self, transport: _AsyncTransport) -> None:
        self._t = transport

    async def create(self, prompt: Optional[str] = None, *, spec: Optional[Mapping[str, Any]] = None, task_id: Optional[str] = None,
                     idempotency_key: Optional[str] = None, plan_only: Optional[bool] = None) -> Task:
        """Starts a task from a ``prompt`` or a ``spec`` (see ``Quarry.tasks.create``)."""
        return cast(Task, await self._t.json(_core.task_create(prompt, spec, task_id, idempotency_key, _core.body(plan_only=plan_only))))

    async def get(self, task_id: str, *, wait: Optional[int] = None) -> TaskDetail:
        """The task, its spec and its last 100 events."""
        return cast(TaskDetail, await self._t.json(Call("GET", f"/task/{seg(task_id)}", params=_core.params(wait=wait))))

    async def state(self, task_id: str, *, wait: Optional[int] = None) -> TaskState:
        """The cheap poll."""
        return cast(TaskState, await self._t.json(Call("GET", f"/task/{seg(task_id)}/state", params=_core.params(wait=wait))))

    def list(self, **filters: Any) -> AsyncIterator[Task]:
        """Every task, page by page (``async for``); filters as ``Quarry.tasks.list`` takes them."""
        return self._t.cursor_pages("/task", dict(filters), None)

    async def continue_(self, task_id: str, message: str, *, offline: Optional[bool] = None, idempotency_key: Optional[str] = None) -> Task:
        """Sends a message to the task (``offline=True``: against the evidence it already has)."""
        return cast(Task, await self._t.json(_core.idempotent("POST", f"/task/{seg(task_id)}/continue", _core.body(message=message, offline=offline),
                                                              idempotency_key)))

    async def execute(self, task_id: str, instruction: Optional[str] = None, *, offline: Optional[bool] = None,
                      idempotency_key: Optional[str] = None) -> Task:
        """Runs the current spec again (``offline=True``: against the evidence it already has)."""
        return cast(Task, await self._t.json(_core.idempotent("POST", f"/task/{seg(task_id)}/execute",
                                                              _core.body(instruction=instruction, offline=offline), idempotency_key)))

    async def stop(self, task_id: str, *, clear_queue: Optional[bool] = None) -> Task:
        """Stops the running turn."""
        return cast(Task, await self._t.json(Call("POST", f"/task/{seg(task_id)}/stop", json=_core.body(clear_queue=clear_queue))))

    def stream(self, task_id: str, after: Optional[int] = None) -> AsyncIterator[TaskEvent]:
        """The task's events (``async for``), resumed after drops, ending after ``done``."""
        return cast(AsyncIterator[TaskEvent], self._t.events(StreamCursor(f"/task/{seg(task_id)}/stream", after)))

    def rows(self, task_id: str, output: Optional[str] = None) -> AsyncIterator[Dict[str, Any]]:
        """Every row of the active output (or of ``output``)."""
        return self._t.offset_pages(_core.output_path(task_id, output), "rows", {}, _core.ROW_PAGE)

    async def export(self, task_id: str, path: str, format: str = "csv", output: Optional[str] = None) -> str:
        """Writes the whole output to ``path``; returns ``path``."""
        return await self._t.download(Call("GET", _core.output_path(task_id, output), params={"format": format}), path)

    def sources(self, task_id: str) -> AsyncIterator[SourceInfo]:
        """Every source snapshot of the task."""
        return self._t.offset_pages(f"/task/{seg(task_id)}/sources", "sources", {}, 200)

    async def recheck(self, task_id: str) -> RecheckResult:
        """Checks every row again against the stored snapshots; ``{rows, changed}``."""
        return cast(RecheckResult, await self._t.json(Call("POST", f"/task/{seg(task_id)}/recheck", json={})))

    def changes(self, task_id: str, since: Optional[str] = None, after: Optional[str] = None) -> AsyncIterator[RowChange]:
        """What the task's turns changed in its keyed outputs, page by page."""
        return self._t.cursor_pages(f"/task/{seg(task_id)}/changes", _core.changes_query(since, after), "changes")


class AsyncGroups:
    """``client.groups`` of :class:`AsyncQuarry`."""

    def __init__(self, transport: _AsyncTransport) -> None:
        self._t = transport

    async def create(self, spec: Mapping[str, Any], *, inputs: Optional[Iterable[Mapping[str, Any]]] = None, inputs_file: Optional[str] = None,
                     content_type: Optional[str] = None, name: Optional[str] = None, max_parallel: Optional[int] = None,
                     max_credits: Optional[float] = None, idempotency_key: Optional[str] = None) -> GroupDetail:
        """Runs ``spec`` once per input (``inputs`` or an uploaded ``inputs_file``)."""
        _core.check_inputs(inputs, inputs_file)
        upload_id = await self._t.upload(inputs_file, content_type) if inputs_file is not None else None
        return cast(GroupDetail, await self._t.json(_core.group_create(spec, inputs, upload_id, name, max_parallel, max_credits, idempotency_key)))

    async def get(self, group_id: str) -> GroupDetail:
        """The group."""
        return cast(GroupDetail, await self._t.json(Call("GET", f"/group/{seg(group_id)}")))

    def list(self, **filters: Any) -> AsyncIterator[Group]:
        """Every group, page by page."""
        return self._t.cursor_pages("/group", dict(filters), None)

    def stream(self, group_id: str, after: Optional[int] = None) -> AsyncIterator[GroupEvent]:
        """The group's events until no run is pending or running."""
        return cast(AsyncIterator[GroupEvent], self._t.events(StreamCursor(f"/group/{seg(group_id)}/stream", after)))

    def rows(self, group_id: str) -> AsyncIterator[Dict[str, Any]]:
        """Every merged row."""
        return self._t.offset_pages(f"/group/{seg(group_id)}/rows", "rows", {}, _core.ROW_PAGE)

    def runs(self, group_id: str, status: Optional[str] = None) -> AsyncIterator[GroupRun]:
        """Every run of the group in input order, rows or not (only those in ``status``, if given)."""
        return self._t.cursor_pages(f"/group/{seg(group_id)}/runs", _core.runs_query(status), "runs")

    def changes(self, group_id: str, since: Optional[str] = None, after: Optional[str] = None) -> AsyncIterator[GroupRowChange]:
        """What the runs' turns changed in their keyed outputs, each with its run and input."""
        return self._t.cursor_pages(f"/group/{seg(group_id)}/changes", _core.changes_query(since, after), "changes")

    async def stop(self, group_id: str) -> GroupDetail:
        """Stops every run."""
        return cast(GroupDetail, await self._t.json(Call("POST", f"/group/{seg(group_id)}/stop", json={})))

    async def retry(self, group_id: str, include: Optional[Iterable[str]] = None, max_credits: Optional[float] = None) -> GroupDetail:
        """Runs the failed (with ``include``, also the stopped) inputs again."""
        return cast(GroupDetail, await self._t.json(_core.group_retry(group_id, include, max_credits)))


class AsyncWebhooks:
    """``client.webhooks`` of :class:`AsyncQuarry`."""

    def __init__(self, transport: _AsyncTransport) -> None:
        self._t = transport

    async def create(self, url: str, events: List[str], description: Optional[str] = None) -> WebhookWithSecret:
        """Registers an endpoint; its ``secret`` is in this answer only."""
        return cast(WebhookWithSecret, await self._t.json(Call("POST", "/webhooks", json=_core.body(url=url, events=events, description=description),
                                                                resendable=False)))

    async def list(self) -> List[Webhook]:
        """The account's endpoints."""
        return cast(List[Webhook], (await self._t.json(Call("GET", "/webhooks")))["webhooks"])

    async def delete(self, webhook_id: str) -> Webhook:
        """Deletes an endpoint."""
        return cast(Webhook, await self._t.json(Call("DELETE", f"/webhooks/{seg(webhook_id)}")))

    def deliveries(self, webhook_id: str, **filters: Any) -> AsyncIterator[WebhookDelivery]:
        """Every delivery to the endpoint, page by page."""
        return self._t.cursor_pages(f"/webhooks/{seg(webhook_id)}/deliveries", dict(filters), "deliveries")

    async def delivery(self, webhook_id: str, delivery_id: str) -> WebhookDeliveryDetail:
        """One delivery with its ``payload`` and ``attempts``."""
        return cast(WebhookDeliveryDetail, await self._t.json(Call("GET", f"/webhooks/{seg(webhook_id)}/deliveries/{seg(delivery_id)}")))


class AsyncQuarry:
    """A client for one Quarry service, for asyncio: the methods of :class:`quarry.Quarry` as
    coroutines, and its iterators as async iterators. Use it with ``async with``, or await
    :meth:`aclose`. The routes are grouped as ``client.tasks`` (:class:`AsyncTasks`),
    ``client.groups`` (:class:`AsyncGroups`) and ``client.webhooks`` (:class:`AsyncWebhooks`);
    :meth:`account` reads the account.

    >>> async with AsyncQuarry() as client:  # doctest: +SKIP
    ...     task = await client.tasks.create(prompt="EU plants making Li-ion cells")
    ...     async for event in client.tasks.stream(task["task_id"]): print(event["type"])
    """

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, timeout: float = _core.DEFAULT_TIMEOUT,
                 max_retries: int = 2, *, transport: Optional[httpx.AsyncBaseTransport] = None) -> None:
        cfg = _core.config(base_url, api_key, timeout, max_retries)
        self.base_url = cfg.base_url
        self._transport = _AsyncTransport(cfg, transport)
        self.tasks = AsyncTasks(self._transport)
        self.groups = AsyncGroups(self._transport)
        self.webhooks = AsyncWebhooks(self._transport)

    async def account(self) -> OwnAccount:
        """The API key's account, its ``balance`` and ``credits_used``."""
        return cast(OwnAccount, await self._transport.json(Call("GET", "/account")))

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._transport.http.aclose()

    async def __aenter__(self) -> "AsyncQuarry":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Any) -> None:
        await self.aclose()
