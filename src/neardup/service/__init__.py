"""neardup over HTTP: check-and-add for crawlers in any language, and a page that shows why
two texts match.

Start it with ``neardup serve --db crawl.db`` (see :mod:`neardup.service.cli`), or build the
ASGI application yourself with :func:`create_app` and serve it with any ASGI server. Needs
the ``service`` extra: ``pip install 'neardup[service]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import DEFAULT_MAX_BODY, create_app

__all__ = ["DEFAULT_MAX_BODY", "create_app"]


def __getattr__(name: str) -> Any:
    # FastAPI is an optional dependency: import it only when the application is wanted
    if name in __all__:
        from ..errors import MissingDependencyError

        try:
            from . import app
        except ImportError as e:
            raise MissingDependencyError(
                f"the HTTP service needs {e.name or 'fastapi'}: pip install 'neardup[service]'"
            ) from e
        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
