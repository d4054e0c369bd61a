"""Quarry's Python client: research tasks, task groups and webhooks over Quarry's HTTP API.

>>> from quarry import Quarry
>>> with Quarry() as client:  # QUARRY_URL and QUARRY_API_KEY from the environment  # doctest: +SKIP
...     task = client.tasks.create(prompt="EU plants making Li-ion cells")
...     for event in client.tasks.stream(task["task_id"]):
...         print(event["type"])
...     for row in client.tasks.rows(task["task_id"]):
...         print(row)

Errors are :class:`QuarryError` subclasses named after their code (``TaskNotFound``,
``OutOfCredits``, ``RateLimited``, ...); bodies and events are TypedDicts in ``quarry.types``.
"""
from . import _catalogue, _core
from ._async import AsyncQuarry
from ._catalogue import *  # noqa: F401,F403 (one exception class per error code)
from ._exceptions import QuarryConnectionError, QuarryError, WebhookVerificationError
from ._sync import Quarry
from ._webhooks import verify_webhook

__all__ = ["Quarry", "AsyncQuarry", "QuarryError", "QuarryConnectionError", "WebhookVerificationError", "verify_webhook"]
__all__ += _catalogue.__all__
__version__ = _core.VERSION
