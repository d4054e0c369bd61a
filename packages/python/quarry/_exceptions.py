"""The exceptions the client raises: ``QuarryError`` and its subclasses (one per error code)."""
from typing import Any, Dict, Optional


class QuarryError(Exception):
    """An error answer of the API (or a request that got no answer), with the catalogue's fields.

    ``code`` is the stable snake_case code to branch on; ``message`` says what went wrong and
    what to do; ``retryable`` whether the same request may succeed later (after ``retry_after``
    seconds when the server names them). Each code has a subclass (``TaskNotFound``,
    ``RateLimited``, ...), so ``except quarry.TaskNotFound:`` catches just that case.
    """

    default_status: Optional[int] = None
    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Optional[int] = None,
        retryable: Optional[bool] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        param: Optional[str] = None,
        body: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status if status is not None else self.default_status
        self.retryable = self.default_retryable if retryable is None else retryable
        self.request_id = request_id
        self.retry_after = retry_after
        self.param = param
        self.body: Dict[str, Any] = body if body is not None else {}

    def __str__(self) -> str:
        where = f" (HTTP {self.status}, request {self.request_id})" if self.status is not None else ""
        return f"{self.code}: {self.message}{where}"


class QuarryConnectionError(QuarryError):
    """No answer arrived: the server could not be reached, the connection dropped, or it timed out."""

    default_retryable = True


class WebhookVerificationError(Exception):
    """A webhook's signature, timestamp or headers did not verify: do not trust its body."""
