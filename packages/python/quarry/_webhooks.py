"""Checking a webhook's Standard Webhooks signature (https://www.standardwebhooks.com)."""
import base64
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Optional, Union

from ._exceptions import WebhookVerificationError

_SECRET_PREFIX = "whsec_"


def verify_webhook(
    body: Union[str, bytes],
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_s: int = 300,
    now: Optional[float] = None,
) -> Any:
    """Checks a webhook request and returns its parsed JSON payload.

    ``body`` is the raw request body exactly as received; ``headers`` the request's headers
    (any mapping; names are matched case-insensitively); ``secret`` the endpoint's ``whsec_...``
    signing secret. Quarry signs ``<webhook-id>.<webhook-timestamp>.<body>`` with HMAC-SHA256;
    during a secret rotation ``webhook-signature`` carries several signatures and any one may
    match. A timestamp more than ``tolerance_s`` seconds from now is refused (replays).

    Raises ``WebhookVerificationError`` when anything does not check out.

    >>> payload = verify_webhook(request_body, request_headers, "whsec_...")  # doctest: +SKIP
    """
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, timestamp, signatures = (lower.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds") from None
    if abs((time.time() if now is None else now) - sent_at) > tolerance_s:
        raise WebhookVerificationError("webhook-timestamp is too far from now")
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    key = base64.b64decode(secret[len(_SECRET_PREFIX):] if secret.startswith(_SECRET_PREFIX) else secret)
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{timestamp}.{text}".encode("utf-8"), hashlib.sha256).digest()).decode("ascii")
    for signature in signatures.split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return json.loads(text)
    raise WebhookVerificationError("no signature matches the secret")
