"""Groups: inline inputs and an uploaded file, their stream, merged rows, runs, stop and retry."""
import os
from typing import Any, Dict

import quarry
from conftest import SPEC


def test_group_from_inputs(client: quarry.Quarry) -> None:
    group = client.groups.create(SPEC, inputs=[{"company": "Northvolt"}, {"company": "ACC"}], name="hq", max_parallel=2, max_credits=50)
    assert group["group_id"].startswith("grp_") and group["max_parallel"] == 2 and group["name"] == "hq"
    events = list(client.groups.stream(group["group_id"]))
    assert events[-1]["type"] == "done" and events[-1]["group"]["counts"]["completed"] == 2
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + len(events)))
    rows = list(client.groups.rows(group["group_id"]))
    assert sorted(r["company"] for r in rows) == ["ACC", "Northvolt"]
    assert {r["_input"] for r in rows} == {0, 1}
    runs = list(client.groups.runs(group["group_id"]))
    assert [(r["input_index"], r["input"], r["status"], r["error"]) for r in runs] == [
        (0, {"company": "Northvolt"}, "completed", None), (1, {"company": "ACC"}, "completed", None)]
    assert sorted(r["task_id"] or "" for r in runs) == sorted(r["_run"]["task_id"] for r in rows)
    assert list(client.groups.runs(group["group_id"], status="failed")) == []
    assert client.groups.get(group["group_id"])["status"] == "finished"
    assert group["group_id"] in [g["group_id"] for g in client.groups.list(limit=1)]
    # Nothing failed, so nothing runs again.
    retried = client.groups.retry(group["group_id"])
    assert retried["status"] == "finished" and retried["counts"]["completed"] == 2


def test_stop_a_running_group(held: quarry.Quarry) -> None:
    group = held.groups.create(SPEC, inputs=[{"company": "Northvolt"}, {"company": "ACC"}], max_parallel=1)
    stopped = held.groups.stop(group["group_id"])
    assert stopped["status"] == "stopped" and stopped["counts"]["pending"] == 0
    events = list(held.groups.stream(group["group_id"]))
    assert events[-1]["type"] == "done" and events[-1]["group"]["counts"]["stopped"] == 2
    assert [(r["input_index"], r["status"]) for r in held.groups.runs(group["group_id"], status="stopped")] == [(0, "stopped"), (1, "stopped")]
    # Only failed runs by default; stopped ones when asked for.
    assert held.groups.retry(group["group_id"])["counts"]["stopped"] == 2
    retried = held.groups.retry(group["group_id"], include=["failed", "stopped"], max_credits=5)
    assert retried["counts"]["stopped"] == 0 and retried["max_credits"] == 5
    assert held.groups.stop(group["group_id"])["counts"]["stopped"] == 2


def test_group_changes(client: quarry.Quarry) -> None:
    spec: Dict[str, Any] = {**SPEC, "outputs": [{"id": "hq", "kind": "table", "key": ["city"], "columns": [{"name": "city", "required": True}]}]}
    group = client.groups.create(spec, inputs=[{"company": "Verkor"}, {"company": "Freyr"}])
    for _ in client.groups.stream(group["group_id"]):
        pass
    changes = list(client.groups.changes(group["group_id"]))
    assert sorted((c["_input"], c["input"]["company"], c["change"]) for c in changes) == [(0, "Verkor", "added"), (1, "Freyr", "added")]
    runs = {r["input_index"]: r["task_id"] for r in client.groups.runs(group["group_id"])}
    assert all(c["task_id"] == runs[c["_input"]] for c in changes)
    assert list(client.groups.changes(group["group_id"], after="2999-01-01T00:00:00Z")) == []
    # Turn ids grow with time: after the later run's turn there is nothing.
    first, last = sorted(c["turn_id"] for c in changes)
    assert [c["turn_id"] for c in client.groups.changes(group["group_id"], since=first)] == [last]
    assert list(client.groups.changes(group["group_id"], since=last)) == []


def test_group_from_a_file(client: quarry.Quarry, tmp_path: Any) -> None:
    path = os.path.join(str(tmp_path), "companies.csv")
    with open(path, "w") as f:
        f.write("company\nVerkor\nFreyr\nMorrow\n")
    group = client.groups.create(SPEC, inputs_file=path)
    assert group["inputs"] == 3
    for _ in client.groups.stream(group["group_id"]):
        pass
    assert sorted(r["company"] for r in client.groups.rows(group["group_id"])) == ["Freyr", "Morrow", "Verkor"]
