"""AsyncQuarry: the same methods, awaited and iterated with async for."""
import os
import time
from typing import Any, AsyncIterator, List

import httpx
import pytest

import quarry
from conftest import SPEC, env


class CuttingAsyncTransport(httpx.AsyncHTTPTransport):
    """Drops the first event stream right after its second frame."""

    def __init__(self) -> None:
        super().__init__()
        self.last_event_ids: List[Any] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        if not request.url.path.endswith("/stream"):
            return response
        self.last_event_ids.append(request.headers.get("Last-Event-ID"))
        if len(self.last_event_ids) > 1:
            return response
        return httpx.Response(response.status_code, headers=response.headers, stream=AsyncCut(response.stream), extensions=response.extensions)


class AsyncCut(httpx.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in self.inner:
            buffer += chunk
            if buffer.count(b"\n\n") >= 2:
                yield buffer[: buffer.index(b"\n\n", buffer.index(b"\n\n") + 2) + 2]
                raise httpx.ReadError("connection reset")
        yield buffer

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.asyncio
async def test_async_tasks() -> None:
    cutter = CuttingAsyncTransport()
    async with quarry.AsyncQuarry(env("QUARRY_URL"), env("QUARRY_API_KEY"), transport=cutter) as client:
        task = await client.tasks.create(prompt="async copper tin")
        events = [e async for e in client.tasks.stream(task["task_id"], after=0)]
        stored = (await client.tasks.get(task["task_id"]))["events"]
        assert [(e["seq"], e["type"]) for e in events] == [(e["seq"], e["type"]) for e in stored]
        assert cutter.last_event_ids == [None, "2"]
        assert sorted([r["word"] async for r in client.tasks.rows(task["task_id"])]) == ["async", "copper", "tin"]
        assert (await client.tasks.state(task["task_id"]))["active"] is False
        assert task["task_id"] in [t["task_id"] async for t in client.tasks.list(limit=2)]
        assert [s async for s in client.tasks.sources(task["task_id"])] == []
        path = await client.tasks.export(task["task_id"], os.path.join(os.environ.get("TMPDIR", "/tmp"), f"async-{os.getpid()}.csv"))
        assert open(path).read().startswith("_row,word,count")
        os.remove(path)
        assert (await client.tasks.recheck(task["task_id"]))["rows"] == 3
        assert [c async for c in client.tasks.changes(task["task_id"], after="2000-01-01T00:00:00Z")] == []  # no keyed output
        assert [t["task_id"] async for t in client.tasks.list(q="async copper", outcome="completed", state="idle")] == [task["task_id"]]
        mark = (await client.tasks.state(task["task_id"]))["last_event_id"]
        await client.tasks.execute(task["task_id"], offline=True)
        assert [e.get("outcome") async for e in client.tasks.stream(task["task_id"], after=mark)][-1] == "completed"
        again = await client.tasks.continue_(task["task_id"], "More.", offline=True)
        await client.tasks.stop(again["task_id"])
        assert (await client.account())["balance"] >= 0
        with pytest.raises(quarry.TaskNotFound):
            await client.tasks.get("tsk_missing")


@pytest.mark.asyncio
async def test_async_groups_and_webhooks() -> None:
    async with quarry.AsyncQuarry(env("QUARRY_URL"), env("QUARRY_API_KEY")) as client:
        group = await client.groups.create(SPEC, inputs=[{"company": "Northvolt"}])
        done = [e async for e in client.groups.stream(group["group_id"])][-1]
        assert done["type"] == "done"
        rows = [r async for r in client.groups.rows(group["group_id"])]
        assert [r["company"] for r in rows] == ["Northvolt"]
        assert [(r["task_id"], r["status"]) async for r in client.groups.runs(group["group_id"])] == [(rows[0]["_run"]["task_id"], "completed")]
        assert [r async for r in client.groups.runs(group["group_id"], status="stopped")] == []
        assert [c async for c in client.groups.changes(group["group_id"])] == []  # no keyed output
        assert (await client.groups.get(group["group_id"]))["status"] == "finished"
        assert group["group_id"] in [g["group_id"] async for g in client.groups.list()]
        assert (await client.groups.retry(group["group_id"], include=["stopped"]))["counts"]["completed"] == 1
        await client.groups.stop(group["group_id"])
        hook = await client.webhooks.create("https://hooks.example.com/quarry", ["group.finished"])
        assert hook["webhook_id"] in [h["webhook_id"] for h in await client.webhooks.list()]
        assert [d async for d in client.webhooks.deliveries(hook["webhook_id"])] == []
        with pytest.raises(quarry.QuarryError):
            await client.webhooks.delivery(hook["webhook_id"], "dlv_missing")
        await client.webhooks.delete(hook["webhook_id"])


@pytest.mark.asyncio
async def test_async_retries_after_retry_after() -> None:
    times: List[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        times.append(time.monotonic())
        if len(times) == 1:
            return httpx.Response(503, json={"error": "at_capacity", "message": "Busy.", "retryable": True, "request_id": "req_1", "retry_after": 1})
        return httpx.Response(200, json={"task_id": "tsk_1", "active": False})

    async with quarry.AsyncQuarry("http://quarry.test", "k", transport=httpx.MockTransport(handler)) as client:
        assert (await client.tasks.state("tsk_1"))["task_id"] == "tsk_1"
    assert len(times) == 2 and times[1] - times[0] >= 1.0
