"""Webhook endpoints, their deliveries, and verify_webhook on a real delivery signed by Quarry."""
import base64
import hashlib
import hmac
import http.server
import json
import threading
import time
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import quarry
from conftest import new_account


class Receiver(http.server.BaseHTTPRequestHandler):
    received: List[Tuple[bytes, Dict[str, str]]] = []
    arrived = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((body, dict(self.headers.items())))
        Receiver.arrived.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()


def test_endpoint_delivery_and_signature(receiver: str) -> None:
    with quarry.Quarry(api_key=new_account(10)) as client:
        hook = client.webhooks.create(receiver, ["task.turn_completed"], description="python")
        assert hook["secret"].startswith("whsec_")
        assert [h["webhook_id"] for h in client.webhooks.list()] == [hook["webhook_id"]]
        task = client.tasks.create(prompt="signed webhook")
        assert Receiver.arrived.wait(30), "no webhook arrived within 30 s"
        body, headers = Receiver.received[0]
        payload = quarry.verify_webhook(body, headers, hook["secret"])
        assert payload["type"] == "task.turn_completed" and payload["data"]["task_id"] == task["task_id"]
        with pytest.raises(quarry.WebhookVerificationError):
            quarry.verify_webhook(body + b" ", headers, hook["secret"])
        with pytest.raises(quarry.WebhookVerificationError):
            quarry.verify_webhook(body, headers, "whsec_" + base64.b64encode(b"another secret").decode())
        deliveries = list(client.webhooks.deliveries(hook["webhook_id"]))
        assert len(deliveries) == 1 and deliveries[0]["event"] == "task.turn_completed"
        assert deliveries[0]["delivery_id"] == {k.lower(): v for k, v in headers.items()}["webhook-id"]
        # The attempt is logged once the answer is in, just after the receiver sent it.
        deadline = time.monotonic() + 10
        while (detail := client.webhooks.delivery(hook["webhook_id"], deliveries[0]["delivery_id"]))["status"] != "delivered":
            assert time.monotonic() < deadline, f"the delivery is still {detail['status']}"
            time.sleep(0.05)
        assert detail["payload"] == payload and detail["delivery_id"] == deliveries[0]["delivery_id"]
        assert [a["status_code"] for a in detail["attempts"]] == [204]
        with pytest.raises(quarry.QuarryError) as missing:
            client.webhooks.delivery(hook["webhook_id"], "dlv_missing")
        assert missing.value.status == 404
        assert client.webhooks.delete(hook["webhook_id"])["webhook_id"] == hook["webhook_id"]
        assert client.webhooks.list() == []


def sign(secret: bytes, msg_id: str, ts: int, body: str) -> str:
    return "v1," + base64.b64encode(hmac.new(secret, f"{msg_id}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()


def test_verify_rotation_and_replay_window() -> None:
    old, new = b"old secret bytes", b"new secret bytes"
    body = json.dumps({"type": "group.finished", "data": {}})
    now = int(time.time())
    headers = {"Webhook-Id": "msg_1", "Webhook-Timestamp": str(now), "Webhook-Signature": f"{sign(new, 'msg_1', now, body)} {sign(old, 'msg_1', now, body)}"}
    for secret in (old, new):
        assert quarry.verify_webhook(body, headers, "whsec_" + base64.b64encode(secret).decode()) == {"type": "group.finished", "data": {}}
    with pytest.raises(quarry.WebhookVerificationError):
        quarry.verify_webhook(body, headers, "whsec_" + base64.b64encode(old).decode(), now=now + 301)
    with pytest.raises(quarry.WebhookVerificationError):
        quarry.verify_webhook(body, {"webhook-id": "msg_1"}, "whsec_" + base64.b64encode(old).decode())
