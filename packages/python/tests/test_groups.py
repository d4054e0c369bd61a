"""Groups: inline inputs and an uploaded file, their stream, merged rows, runs, stop and retry."""
import os
from typing import Any

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
    assert sorted(r["task_id"] for r in runs) == sorted(r["_run"]["task_id"] for r in rows)
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


def test_group_from_a_file(client: quarry.Quarry, tmp_path: Any) -> None:
    path = os.path.join(str(tmp_path), "companies.csv")
    with open(path, "w") as f:
        f.write("company\nVerkor\nFreyr\nMorrow\n")
    group = client.groups.create(SPEC, inputs_file=path)
    assert group["inputs"] == 3
    for _ in client.groups.stream(group["group_id"]):
        pass
    assert sorted(r["company"] for r in client.groups.rows(group["group_id"])) == ["Freyr", "Morrow", "Verkor"]
