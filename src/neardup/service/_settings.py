"""What a service is started with: one object, checked once, read by every part of it."""

from __future__ import annotations

from dataclasses import dataclass

from ._middleware import allowed_name

__all__ = ["DEFAULT_MAX_BODY", "Settings"]

#: The largest request body accepted by default: 10 MB.
DEFAULT_MAX_BODY = 10 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """The options of :func:`neardup.service.create_app` (see there)."""

    api_key: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_body < 1:
            raise ValueError(f"max_body must be at least 1 byte, got {self.max_body}")
        for host in self.allowed_hosts:
            if host != "*" and allowed_name(host) is None:
                raise ValueError(
                    f"allowed host {host!r} is not a host name or address (or '*' for any)"
                )
