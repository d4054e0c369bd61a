"""Every task method against a real Quarry (demo model: a turn writes one row per distinct word)."""
import csv
import json
import os
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import httpx
import pytest

import quarry
from conftest import SPEC, new_account


def words_task(client: quarry.Quarry, prompt: str, **kwargs: Any) -> str:
    task = client.tasks.create(prompt=prompt, **kwargs)
    # after=0: from the first event, so a turn that ended before the stream opened is seen too.
    for _ in client.tasks.stream(task["task_id"], after=0):
        pass
    return task["task_id"]


def test_create_stream_rows_state_get(client: quarry.Quarry) -> None:
    task = client.tasks.create(prompt="nickel cobalt lithium")
    assert task["task_id"].startswith("tsk_")
    events = list(client.tasks.stream(task["task_id"], after=0))
    assert events[-1]["type"] == "done" and events[-1]["outcome"] == "completed"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {"task", "tool", "text"} <= {e["type"] for e in events}

    rows = list(client.tasks.rows(task["task_id"]))
    assert sorted(r["word"] for r in rows) == ["cobalt", "lithium", "nickel"]
    assert all(r["_sources"] for r in rows)
    assert list(client.tasks.rows(task["task_id"], output="demo_word_counts")) == rows

    state = client.tasks.state(task["task_id"])
    assert state["active"] is False and state["last_event_id"] == events[-1]["seq"]
    detail = client.tasks.get(task["task_id"])
    assert detail["task_id"] == task["task_id"] and detail["events"][-1]["seq"] == events[-1]["seq"]

    # An idle task's stream: its snapshot, then done idle.
    idle = list(client.tasks.stream(task["task_id"]))
    assert [(e["type"], e.get("outcome")) for e in idle] == [("task", None), ("done", "idle")]


def test_stream_after_replays_from_there(client: quarry.Quarry) -> None:
    task_id = words_task(client, "zinc tin")
    events = list(client.tasks.stream(task_id, after=3))
    assert events[0]["seq"] == 4 and events[-1]["type"] == "done"


def test_spec_task_id_idempotency_and_plan_execute(client: quarry.Quarry) -> None:
    spec = {"prompt": "copper silver", "outputs": [{"id": "words", "kind": "table", "columns": [{"name": "word"}, {"name": "count", "type": "integer"}]}]}
    key = f"py-idem-{os.getpid()}"
    first = client.tasks.create(spec=spec, task_id=f"py-spec-{os.getpid()}", idempotency_key=key)
    again = client.tasks.create(spec=spec, task_id=f"py-spec-{os.getpid()}", idempotency_key=key)
    assert first["task_id"] == again["task_id"] == f"py-spec-{os.getpid()}"
    for _ in client.tasks.stream(first["task_id"], after=0):
        pass
    mark = client.tasks.state(first["task_id"])["last_event_id"]
    executed = client.tasks.execute(first["task_id"], instruction="Count again.")
    assert executed["task_id"] == first["task_id"]
    done = [e for e in client.tasks.stream(first["task_id"], after=mark) if e["type"] == "done"]
    assert done[-1]["outcome"] == "completed"
    with pytest.raises(TypeError):
        client.tasks.create()


def test_continue_stop_and_list(client: quarry.Quarry) -> None:
    task_id = words_task(client, "iron")
    continued = client.tasks.continue_(task_id, "Add manganese too.")
    assert continued["task_id"] == task_id
    assert client.tasks.stop(task_id)["task_id"] == task_id

    # Pages of one: the iterator fetches every page.
    listed = [t["task_id"] for t in client.tasks.list(limit=1)]
    assert task_id in listed and len(listed) == len(set(listed)) and len(listed) >= 2


def test_list_filters(client: quarry.Quarry) -> None:
    word = f"filterword{os.getpid()}"
    task_id = words_task(client, f"{word} bismuth")
    created = client.tasks.get(task_id)["created_at"]
    assert [t["task_id"] for t in client.tasks.list(q=word.upper())] == [task_id]
    assert [t["task_id"] for t in client.tasks.list(q=word, state="idle", outcome="completed")] == [task_id]
    assert list(client.tasks.list(q=word, state="running")) == []
    assert list(client.tasks.list(q=word, outcome="failed")) == []
    assert [t["task_id"] for t in client.tasks.list(q=word, created_before="2999-01-01T00:00:00Z", created_after="2000-01-01T00:00:00Z")] == [task_id]
    assert list(client.tasks.list(q=word, created_after="2999-01-01T00:00:00Z")) == []
    assert list(client.tasks.list(q=word, created_before=created[:4] + "-01-01T00:00:00Z")) == []


class RecordingTransport(httpx.HTTPTransport):
    """Keeps the route and body of every write it carries to the real server, once per
    Idempotency-Key (a resend carries the key of the first try)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: Dict[str, Tuple[str, Dict[str, Any]]] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key = request.headers.get("Idempotency-Key")
        if key is not None:
            self.writes.setdefault(key, (request.url.path.rsplit("/", 1)[-1], json.loads(request.read() or b"{}")))
        return super().handle_request(request)


def test_offline_continue_and_execute() -> None:
    recorder = RecordingTransport()
    with quarry.Quarry(transport=recorder) as client:
        task_id = words_task(client, "offline lead")
        mark = client.tasks.state(task_id)["last_event_id"]
        client.tasks.execute(task_id, offline=True)
        done = [e for e in client.tasks.stream(task_id, after=mark) if e["type"] == "done"]
        assert done[-1]["outcome"] == "completed"
        mark = client.tasks.state(task_id)["last_event_id"]
        client.tasks.continue_(task_id, "From what you read.", offline=True)
        done = [e for e in client.tasks.stream(task_id, after=mark) if e["type"] == "done"]
        assert done[-1]["outcome"] == "completed"
        client.tasks.execute(task_id)
    assert list(recorder.writes.values())[1:] == [("execute", {"offline": True}), ("continue", {"message": "From what you read.", "offline": True}),
                                                  ("execute", {})]


def test_changes_and_recheck(client: quarry.Quarry) -> None:
    # The demo model keeps a spec's keyed output only in a group's runs (a task of its own gets its word counts).
    spec: Dict[str, Any] = {**SPEC, "outputs": [{"id": "hq", "kind": "table", "key": ["city"], "columns": [{"name": "city", "required": True}]}]}
    group = client.groups.create(spec, inputs=[{"company": "Morrow"}])
    for _ in client.groups.stream(group["group_id"]):
        pass
    task_id = next(client.groups.runs(group["group_id"]))["task_id"]
    assert task_id is not None
    changes = list(client.tasks.changes(task_id))
    assert [(c["change"], c["output"], c["fields"]["city"]["before"]) for c in changes] == [("added", "hq", None)]
    assert changes[0]["key"] == {"city": changes[0]["fields"]["city"]["after"]}
    assert list(client.tasks.changes(task_id, since=changes[0]["turn_id"])) == []
    assert list(client.tasks.changes(task_id, after="2999-01-01T00:00:00Z")) == []
    assert list(client.tasks.changes(task_id, after="2000-01-01T00:00:00Z")) == changes

    assert client.tasks.recheck(task_id)["rows"] == 1
    assert client.tasks.recheck(task_id) == {"rows": 1, "changed": 0}  # a second recheck changes nothing
    with pytest.raises(quarry.TaskNotFound):
        client.tasks.recheck("tsk_missing")


def test_account() -> None:
    with quarry.Quarry(api_key=new_account(7.5)) as client:
        account = client.account()
    assert account["name"] == "python-client" and account["balance"] == 7.5 and account["credits_used"] == 0
    assert account["account_id"].startswith("acct_")


def test_export_and_sources(client: quarry.Quarry, tmp_path: Any) -> None:
    task_id = words_task(client, "gold platinum")
    path = client.tasks.export(task_id, str(tmp_path / "words.csv"))
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    assert sorted(r["word"] for r in table) == ["gold", "platinum"]
    jsonl = client.tasks.export(task_id, str(tmp_path / "words.jsonl"), format="jsonl", output="demo_word_counts")
    assert len(open(jsonl).read().splitlines()) == 2
    assert list(client.tasks.sources(task_id)) == []  # the demo model reads no page


class CuttingTransport(httpx.HTTPTransport):
    """Cuts the first event stream it carries in the middle of its `cut_after`+1-th frame."""

    def __init__(self, cut_after: int) -> None:
        super().__init__()
        self.cut_after = cut_after
        self.stream_requests: List[Dict[str, Optional[str]]] = []
        self.cut = threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if not request.url.path.endswith("/stream"):
            return response
        self.stream_requests.append({"last_event_id": request.headers.get("Last-Event-ID"), "after": request.url.params.get("after")})
        if self.cut.is_set():
            return response
        self.cut.set()
        return httpx.Response(response.status_code, headers=response.headers, stream=Cut(response.stream, self.cut_after), extensions=response.extensions)


class Cut(httpx.SyncByteStream):
    def __init__(self, inner: Any, frames: int) -> None:
        self.inner = inner
        self.frames = frames

    def __iter__(self) -> Iterator[bytes]:
        buffer = b""
        for chunk in self.inner:
            buffer += chunk
            ends = [i for i in range(len(buffer)) if buffer.startswith(b"\n\n", i)]
            if len(ends) > self.frames:
                # Half of the next frame goes out, then the connection drops.
                end = ends[self.frames - 1] + 2
                yield buffer[: end + (ends[self.frames] - end) // 2]
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        yield buffer

    def close(self) -> None:
        self.inner.close()


def test_stream_cut_mid_turn_resumes_without_loss_or_duplicates() -> None:
    cutter = CuttingTransport(cut_after=3)
    with quarry.Quarry(transport=cutter) as client:
        task = client.tasks.create(prompt="a stream cut in the middle of its turn resumes")
        events = list(client.tasks.stream(task["task_id"], after=0))
        stored = client.tasks.get(task["task_id"])["events"]
    assert [(e["seq"], e["type"]) for e in events] == [(e["seq"], e["type"]) for e in stored]
    assert events[-1]["type"] == "done" and events[-1]["outcome"] == "completed"
    # The first connection gave three events before the cut; the second resumed after the third.
    assert len(cutter.stream_requests) == 2
    assert cutter.stream_requests[1]["last_event_id"] == "3"
