"""What a service is started with: one object, checked once, read by every part of it."""

from __future__ import annotations

from dataclasses import dataclass

from ._middleware import allowed_name

__all__ = [
    "DEFAULT_HEALTH_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_COMPARE_CELLS",
    "DEFAULT_MAX_COMPARE_CHARS",
    "DEFAULT_MAX_CONCURRENT_COMPARE",
    "DEFAULT_MAX_QUEUE",
    "DEFAULT_QUEUE_TIMEOUT",
    "Settings",
]

#: The largest request body accepted by default: 10 MB.
DEFAULT_MAX_BODY = 10 * 1024 * 1024
#: How long /healthz and /metrics wait for the store by default, in seconds.
DEFAULT_HEALTH_TIMEOUT = 1.0
#: How long a request waits for its turn at the store by default, in seconds.
DEFAULT_QUEUE_TIMEOUT = 30.0
#: How many requests may wait for their turn at the store by default.
DEFAULT_MAX_QUEUE = 64
#: The longest text /v1/compare takes by default, in characters as sent.
DEFAULT_MAX_COMPARE_CHARS = 100_000
#: The largest len(a) * len(b), after normalization, /v1/compare takes by default: mcc and
#: contiguity compare every offset, so their work grows with the product (about 0.5 s of CPU
#: for two texts of 5,000 characters).
DEFAULT_MAX_COMPARE_CELLS = 25_000_000
#: How many comparisons run at once by default; more are answered 429.
DEFAULT_MAX_CONCURRENT_COMPARE = 2


@dataclass(frozen=True)
class Settings:
    """The options of :func:`neardup.service.create_app` (see there)."""

    api_key: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    allowed_hosts: tuple[str, ...] = ()
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT
    queue_timeout: float = DEFAULT_QUEUE_TIMEOUT
    max_queue: int = DEFAULT_MAX_QUEUE
    max_compare_chars: int = DEFAULT_MAX_COMPARE_CHARS
    max_compare_cells: int = DEFAULT_MAX_COMPARE_CELLS
    max_concurrent_compare: int = DEFAULT_MAX_CONCURRENT_COMPARE

    def __post_init__(self) -> None:
        if self.max_body < 1:
            raise ValueError(f"max_body must be at least 1 byte, got {self.max_body}")
        for name in ("health_timeout", "queue_timeout"):
            value = getattr(self, name)
            if not 0 < value < 1e6:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        for name in ("max_queue", "max_compare_chars", "max_compare_cells"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_concurrent_compare < 1:
            raise ValueError(
                f"max_concurrent_compare must be at least 1, got {self.max_concurrent_compare}"
            )
        for host in self.allowed_hosts:
            if host != "*" and allowed_name(host) is None:
                raise ValueError(
                    f"allowed host {host!r} is not a host name or address (or '*' for any)"
                )
