# Generated from Quarry's error catalogue (src/errors.ts) by scripts/generate-python-client.ts: do not edit.
# Run `npm run generate` after changing the contract; a test fails while this file is stale.
"""One exception class per error code of the catalogue."""
from typing import Dict, Type

from ._exceptions import QuarryError

__all__ = ["InvalidRequest", "Unauthorized", "OutOfCredits", "OriginNotAllowed", "TaskNotFound", "SourceNotFound", "GroupNotFound", "WebhookNotFound", "DeliveryNotFound", "NotFound", "MethodNotAllowed", "RequestTimeout", "TaskExecuting", "TaskInCronMode", "TaskExists", "WebhookLimitReached", "PayloadTooLarge", "UnsupportedMediaType", "RateLimited", "InternalError", "BadGateway", "ServiceUnavailable", "AtCapacity", "AuthUnavailable", "LimitReached"]


class InvalidRequest(QuarryError):
    """``invalid_request`` (HTTP 400): The request was rejected. / A field failed validation. / The Expect header asks for something other than 100-continue. / The request line and headers are too large."""

    default_status = 400
    default_retryable = False


class Unauthorized(QuarryError):
    """``unauthorized`` (HTTP 401): Credentials are missing or invalid: send X-API-Key or Authorization: Bearer."""

    default_status = 401
    default_retryable = False


class OutOfCredits(QuarryError):
    """``out_of_credits`` (HTTP 402): The account has no credits left: add credits, then resend."""

    default_status = 402
    default_retryable = False


class OriginNotAllowed(QuarryError):
    """``origin_not_allowed`` (HTTP 403): Requests from this web origin are not accepted here."""

    default_status = 403
    default_retryable = False


class TaskNotFound(QuarryError):
    """``task_not_found`` (HTTP 404): No task with that id."""

    default_status = 404
    default_retryable = False


class SourceNotFound(QuarryError):
    """``source_not_found`` (HTTP 404): No source snapshot with that id for this task."""

    default_status = 404
    default_retryable = False


class GroupNotFound(QuarryError):
    """``group_not_found`` (HTTP 404): No task group with that id."""

    default_status = 404
    default_retryable = False


class WebhookNotFound(QuarryError):
    """``webhook_not_found`` (HTTP 404): No webhook endpoint with that id."""

    default_status = 404
    default_retryable = False


class DeliveryNotFound(QuarryError):
    """``delivery_not_found`` (HTTP 404): No delivery with that id for this endpoint."""

    default_status = 404
    default_retryable = False


class NotFound(QuarryError):
    """``not_found`` (HTTP 404): No such route."""

    default_status = 404
    default_retryable = False


class MethodNotAllowed(QuarryError):
    """``method_not_allowed`` (HTTP 405): Wrong method for this route."""

    default_status = 405
    default_retryable = False


class RequestTimeout(QuarryError):
    """``request_timeout`` (HTTP 408): The request did not arrive in time: send it again, whole."""

    default_status = 408
    default_retryable = True


class TaskExecuting(QuarryError):
    """``task_executing`` (HTTP 409): A turn is running: poll /state until active is false, then resend."""

    default_status = 409
    default_retryable = True


class TaskInCronMode(QuarryError):
    """``task_in_cron_mode`` (HTTP 409): The task runs on a schedule and takes no messages."""

    default_status = 409
    default_retryable = False


class TaskExists(QuarryError):
    """``task_exists`` (HTTP 409): A task with that task_id already exists: continue it instead."""

    default_status = 409
    default_retryable = False


class WebhookLimitReached(QuarryError):
    """``webhook_limit_reached`` (HTTP 409): The account has as many webhook endpoints as it may: delete one first."""

    default_status = 409
    default_retryable = False


class PayloadTooLarge(QuarryError):
    """``payload_too_large`` (HTTP 413): The body is too large: send large inputs via POST /upload-url."""

    default_status = 413
    default_retryable = False


class UnsupportedMediaType(QuarryError):
    """``unsupported_media_type`` (HTTP 415): The body must be JSON with Content-Type: application/json."""

    default_status = 415
    default_retryable = False


class RateLimited(QuarryError):
    """``rate_limited`` (HTTP 429): Too many requests for this key."""

    default_status = 429
    default_retryable = True


class InternalError(QuarryError):
    """``internal_error`` (HTTP 500): Something went wrong on our side."""

    default_status = 500
    default_retryable = True


class BadGateway(QuarryError):
    """``bad_gateway`` (HTTP 502): An upstream service failed: resend shortly."""

    default_status = 502
    default_retryable = True


class ServiceUnavailable(QuarryError):
    """``service_unavailable`` (HTTP 503): Task state cannot be read right now."""

    default_status = 503
    default_retryable = True


class AtCapacity(QuarryError):
    """``at_capacity`` (HTTP 503): Too many turns are waiting to run."""

    default_status = 503
    default_retryable = True


class AuthUnavailable(QuarryError):
    """``auth_unavailable`` (HTTP 503): Key verification is unavailable right now."""

    default_status = 503
    default_retryable = True


class LimitReached(QuarryError):
    """``limit_reached`` (only a turn's error event carries it): The turn hit one of the spec's limits."""

    default_status = None
    default_retryable = False


ERROR_CLASSES: Dict[str, Type[QuarryError]] = {
    "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "out_of_credits": OutOfCredits,
    "origin_not_allowed": OriginNotAllowed,
    "task_not_found": TaskNotFound,
    "source_not_found": SourceNotFound,
    "group_not_found": GroupNotFound,
    "webhook_not_found": WebhookNotFound,
    "delivery_not_found": DeliveryNotFound,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "request_timeout": RequestTimeout,
    "task_executing": TaskExecuting,
    "task_in_cron_mode": TaskInCronMode,
    "task_exists": TaskExists,
    "webhook_limit_reached": WebhookLimitReached,
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "rate_limited": RateLimited,
    "internal_error": InternalError,
    "bad_gateway": BadGateway,
    "service_unavailable": ServiceUnavailable,
    "at_capacity": AtCapacity,
    "auth_unavailable": AuthUnavailable,
    "limit_reached": LimitReached,
}
