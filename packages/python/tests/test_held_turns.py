"""While a turn runs (the held server's model never answers): refusals, queued messages, stop."""
import pytest

import quarry


def test_execute_while_a_turn_runs_is_task_executing(held: quarry.Quarry) -> None:
    task = held.tasks.create(prompt="a turn that runs until it is stopped")
    assert held.tasks.state(task["task_id"])["active"] is True
    with pytest.raises(quarry.TaskExecuting) as caught:
        held.tasks.execute(task["task_id"])
    assert (caught.value.status, caught.value.retryable, caught.value.code) == (409, True, "task_executing")
    held.tasks.stop(task["task_id"], clear_queue=True)


def test_continue_queues_then_stop_ends_the_turn(held: quarry.Quarry) -> None:
    task = held.tasks.create(prompt="a turn to queue a message behind")
    queued = held.tasks.continue_(task["task_id"], "And then this.")
    assert queued["status"] == "accepted" and queued["queued_messages"] == 1
    stopped = held.tasks.stop(task["task_id"], clear_queue=True)
    assert stopped["queued_messages"] == 0
    events = held.tasks.get(task["task_id"])["events"]
    assert [e["outcome"] for e in events if e["type"] == "done"] == ["stopped"]
    assert held.tasks.state(task["task_id"])["active"] is False
