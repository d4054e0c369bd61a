"""Error answers become the exception class of their code, with the catalogue's fields; retryable
ones are resent after the server's retry_after, up to max_retries."""
import json
import time
from typing import Any, List

import httpx
import pytest

import quarry
from quarry._catalogue import ERROR_CLASSES
from conftest import SPEC, new_account


def test_task_not_found(client: quarry.Quarry) -> None:
    with pytest.raises(quarry.TaskNotFound) as caught:
        client.tasks.get("tsk_missing")
    err = caught.value
    assert isinstance(err, quarry.QuarryError)
    assert (err.code, err.status, err.retryable) == ("task_not_found", 404, False)
    assert err.request_id and err.request_id.startswith("req_")
    assert "tsk_missing" in err.message


def test_validation_names_the_param(client: quarry.Quarry) -> None:
    with pytest.raises(quarry.InvalidRequest) as caught:
        client.tasks.create(prompt="   ")
    assert caught.value.status == 422 and caught.value.param == "prompt"


def test_unauthorized() -> None:
    with quarry.Quarry(api_key="qry_wrong") as client:
        with pytest.raises(quarry.Unauthorized) as caught:
            client.tasks.state("tsk_x")
    assert caught.value.status == 401


def test_group_and_webhook_not_found(client: quarry.Quarry) -> None:
    with pytest.raises(quarry.GroupNotFound):
        client.groups.get("grp_missing")
    with pytest.raises(quarry.WebhookNotFound):
        client.webhooks.delete("wh_missing")


def test_task_exists(client: quarry.Quarry) -> None:
    spec = {"prompt": "one two", "outputs": [{"id": "words", "kind": "table", "columns": [{"name": "word"}]}]}
    task_id = f"py-exists-{time.time_ns()}"
    client.tasks.create(spec=spec, task_id=task_id)
    with pytest.raises(quarry.TaskExists) as caught:
        client.tasks.create(spec=spec, task_id=task_id)
    assert caught.value.status == 409


def test_out_of_credits() -> None:
    with quarry.Quarry(api_key=new_account(0)) as client:
        with pytest.raises(quarry.OutOfCredits) as caught:
            client.tasks.create(prompt="no credits left")
        with pytest.raises(quarry.OutOfCredits):
            client.groups.create(SPEC, inputs=[{"company": "Northvolt"}])
    assert caught.value.status == 402 and caught.value.body.get("resolve")


@pytest.mark.parametrize("code", sorted(ERROR_CLASSES))
def test_each_code_raises_its_class(code: str) -> None:
    """Whatever code an answer carries, the exception is the catalogue's class for it."""
    status = ERROR_CLASSES[code].default_status or 400
    handler = answers(httpx.Response(status, json={"error": code, "message": f"{code}.", "retryable": False, "request_id": "req_c", "param": "task"}))
    with quarry.Quarry(base_url="http://quarry.test", api_key="k", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ERROR_CLASSES[code]) as caught:
            client.tasks.state("tsk_1")
    assert (caught.value.code, caught.value.status, caught.value.param) == (code, status, "task")
    assert getattr(quarry, type(caught.value).__name__) is ERROR_CLASSES[code]


def test_no_answer_is_a_connection_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with quarry.Quarry(base_url="http://quarry.test", api_key="k", max_retries=1, transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(quarry.QuarryConnectionError) as caught:
            client.tasks.state("tsk_1")
    assert caught.value.retryable and caught.value.status is None


def answers(*responses: httpx.Response) -> "Recorder":
    return Recorder(list(responses))


class Recorder:
    """A MockTransport handler that answers in turn and notes when each request came."""

    def __init__(self, responses: List[httpx.Response]) -> None:
        self.responses = responses
        self.times: List[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.times.append(time.monotonic())
        return self.responses.pop(0)


def refusal(status: int, code: str, retry_after: Any = None, header: bool = False) -> httpx.Response:
    body = {"error": code, "message": f"{code} for a moment", "retryable": True, "request_id": "req_test"}
    if retry_after is not None and not header:
        body["retry_after"] = retry_after
    return httpx.Response(status, content=json.dumps(body), headers={"Content-Type": "application/json", **({"Retry-After": str(retry_after)} if header else {})})


STATE = {"task_id": "tsk_1", "active": False}


@pytest.mark.parametrize("status,code,header", [(429, "rate_limited", False), (503, "at_capacity", False), (503, "service_unavailable", True)])
def test_retries_after_retry_after(status: int, code: str, header: bool) -> None:
    handler = answers(refusal(status, code, 1, header), httpx.Response(200, json=STATE))
    with quarry.Quarry(base_url="http://quarry.test", api_key="k", transport=httpx.MockTransport(handler)) as client:
        assert client.tasks.state("tsk_1") == STATE
    assert len(handler.times) == 2
    assert handler.times[1] - handler.times[0] >= 1.0


def test_gives_up_after_max_retries() -> None:
    handler = answers(*(refusal(429, "rate_limited", 0) for _ in range(3)))
    with quarry.Quarry(base_url="http://quarry.test", api_key="k", max_retries=2, transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(quarry.RateLimited) as caught:
            client.tasks.state("tsk_1")
    assert len(handler.times) == 3 and caught.value.retry_after == 0 and caught.value.request_id == "req_test"


def test_not_retryable_is_not_resent() -> None:
    handler = answers(httpx.Response(404, json={"error": "task_not_found", "message": "No task.", "retryable": False, "request_id": "req_x"}))
    with quarry.Quarry(base_url="http://quarry.test", api_key="k", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(quarry.TaskNotFound):
            client.tasks.get("tsk_1")
    assert len(handler.times) == 1


def test_sends_the_key_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=STATE)

    monkeypatch.setenv("QUARRY_URL", "http://from-env.test/")
    monkeypatch.setenv("QUARRY_API_KEY", "qry_from_env")
    with quarry.Quarry(transport=httpx.MockTransport(handler)) as client:
        client.tasks.state("tsk_1")
    assert str(seen[0].url) == "http://from-env.test/task/tsk_1/state"
    assert seen[0].headers["Authorization"] == "Bearer qry_from_env"
