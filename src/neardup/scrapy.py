"""A Scrapy add-on that drops near-duplicate items during a crawl: the same story fetched
from twenty sites under twenty URLs is kept once, in one spider or a fleet of them.

Enable it in a project's ``settings.py`` (Scrapy 2.13 or newer, ``pip install
'neardup[scrapy]'``)::

    ADDONS = {"neardup.scrapy.NearDupAddon": 100}

Items are compared by their ``text`` field (``NEARDUP_TEXT_FIELD``), or by the main text
extracted from an HTML field (``NEARDUP_HTML_FIELD``, with trafilatura, so navigation and
footers do not count). The first copy of a story is kept; later copies are dropped
(``NEARDUP_MODE = "drop"``) or kept and marked (``"annotate"``: ``neardup_duplicate_of``,
``neardup_score``). Several crawler processes sharing one ``NEARDUP_STORE = "redis://..."``
keep each story once between them. The stats ``neardup/kept``, ``neardup/duplicates`` and
``neardup/errors`` add up to the items seen.

Decisions are made in one worker process of the pipeline's own, never on the reactor's
thread: a store call that waits (SQLite locked by another process, Redis far away) delays
the items waiting for it, not the crawl, and the sketching and main-text extraction run on
another core instead of taking turns with the crawl for the GIL. Items that arrive while
the worker is busy are decided together, in arrival order, in one atomic
``check_and_add_many`` (the same decisions as one by one, one round trip to the store).
``NEARDUP_WORKER = "thread"`` decides on one thread of the crawler's process instead (no
second process; the work then shares the GIL with the crawl).

>>> p = NearDupPipeline(store="memory://", mode="annotate")
>>> p.mode, p.text_field, p.id_field, p.options.store
('annotate', 'text', 'url', 'memory://')
>>> p.close()
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import secrets
import signal
from collections.abc import Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from .deduper import Decision, Deduper
from .engine import DedupConfig
from .engine.templates import crowding
from .errors import ConfigError, InputError, StoreError
from .options import sqlite_url
from .records import field_value, joined_text, no_text
from .records.extract import Extractor, main_text_extractor
from .settings import coerce_setting, make_config
from .store import redacted
from .times import parse_window, timestamp_or_none

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

__all__ = [
    "Job",
    "NearDupAddon",
    "NearDupPipeline",
    "Options",
    "Outcome",
    "Unusable",
    "Worker",
    "default_store",
    "shown_id",
]

logger = logging.getLogger(__name__)

Mode = Literal["drop", "annotate"]
MODES: Final = ("drop", "annotate")
WorkerKind = Literal["process", "thread"]
WORKERS: Final = ("process", "thread")
PIPELINE: Final = "neardup.scrapy.NearDupPipeline"
#: where the add-on puts the pipeline: before the usual storage pipelines (300 and up)
PRIORITY: Final = 200
#: at most this many items are decided in one atomic section
BATCH: Final = 64
DUPLICATE_OF: Final = "neardup_duplicate_of"
EXTENDS: Final = "neardup_extends"
SCORE: Final = "neardup_score"
STORE_FILE: Final = "neardup.db"

# Every item gets a store id of its own, "<id field> @<run>-<n>": a page fetched again (by
# this process, another one of the fleet, or tomorrow's crawl) is then a copy of its earlier
# self and is dropped, where an id the store already has would only repeat its old "kept".
_SUFFIX = re.compile(r" @[0-9a-f]{10}-\d+$")


def shown_id(store_id: str) -> str:
    """The item id (its URL, usually) inside a store id the pipeline made.

    >>> shown_id("https://example.com/a @0123456789-17"), shown_id("doc-1")
    ('https://example.com/a', 'doc-1')
    """
    return _SUFFIX.sub("", store_id)


class NearDupAddon:
    """The add-on: ``ADDONS = {"neardup.scrapy.NearDupAddon": 100}`` installs
    :class:`NearDupPipeline` in ``ITEM_PIPELINES`` (at 200, unless the project places it
    itself). Everything else is read from the ``NEARDUP_*`` settings."""

    def update_settings(self, settings: BaseSettings) -> None:
        """Add the pipeline to ``ITEM_PIPELINES`` with the add-ons' priority."""
        pipelines = settings["ITEM_PIPELINES"]
        if PIPELINE not in pipelines and NearDupPipeline not in pipelines:
            pipelines.set(PIPELINE, PRIORITY, priority="addon")


@dataclass(frozen=True, slots=True)
class Job:
    """One item's fields, read on the reactor thread and decided on the worker."""

    id: str
    text: str | None
    html: str | bytes | None
    title: str | None
    timestamp: float | None


@dataclass(frozen=True, slots=True)
class Unusable:
    """Why an item could not be decided: a stat key and a message."""

    reason: str
    message: str


Outcome = Decision | Unusable


def _text_value(value: object) -> str | None:
    """A text field's value as one string (a list of strings, as ``getall()`` gives, is
    joined by lines: :func:`~neardup.records.joined_text`); None when it holds something
    else."""
    text = joined_text(value)
    return text if isinstance(text, str) else None


def _load_extractor() -> Extractor:
    """trafilatura's main-text extraction (:mod:`neardup.records.extract`, as WARC input
    uses it), or MissingDependencyError."""
    return main_text_extractor(
        "NEARDUP_HTML_FIELD needs trafilatura to extract the main text: "
        "pip install 'neardup[scrapy]'"
    )


def _fraction(name: str, value: object) -> float:
    """A threshold setting as a float in (0, 1], or ConfigError naming the setting."""
    try:
        number = float(cast(Any, value))
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number in (0, 1], got {value!r}") from None
    if not 0.0 < number <= 1.0:
        raise ConfigError(f"{name} must be in (0, 1], got {value!r}")
    return number


def _extra_settings(s: BaseSettings) -> dict[str, object]:
    """``NEARDUP_SET``: any DedupConfig setting by name (a dict, or its JSON on the command
    line: ``-s 'NEARDUP_SET={"common_after": 10}'``), each value checked."""
    raw = s.get("NEARDUP_SET")
    if raw is None or raw == "":
        return {}
    try:
        given = s.getdict("NEARDUP_SET")
    except (TypeError, ValueError):
        raise ConfigError(
            f"NEARDUP_SET must be a dict of setting: value (JSON on the command line), got {raw!r}"
        ) from None
    out: dict[str, object] = {}
    for name, value in given.items():
        try:
            out[str(name)] = coerce_setting(str(name), value)
        except ConfigError as exc:
            raise ConfigError(f"NEARDUP_SET: {exc}") from None
    return out


class _OneLine(logging.Filter):
    """Makes the log record of a start-up setting error one line: asyncio logs the failed
    crawl's exception with its whole traceback ("Task exception was never retrieved")."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException] = []

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and any(exc is e for e in self.errors):
            record.name = __name__
            record.msg, record.args = "%s.%s: %s", (type(exc).__module__, type(exc).__name__, exc)
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE = _OneLine()


def _one_line(exc: BaseException) -> None:
    """Log ``exc`` as one line when the crawl it stops reports it."""
    _ONE_LINE.errors.append(exc)
    for name in ("asyncio", "twisted"):
        log = logging.getLogger(name)
        if _ONE_LINE not in log.filters:
            log.addFilter(_ONE_LINE)


def _field(name: str, value: object, *, required: bool) -> str | None:
    if value is None or value == "":
        if required:
            raise ConfigError(f"{name} must name an item field, got {value!r}")
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a field name (a str), got {value!r}")
    return value


class NearDupPipeline:
    """An item pipeline that keeps the first item of each story and drops (or marks) the
    later copies. Built by Scrapy with :meth:`from_crawler`; ``__init__`` takes plain values,
    so it also works without a crawler.

    ``store`` is a store URL (see :mod:`neardup.store`); ``text_field`` holds the text to
    compare, ``html_field`` (when given) HTML whose main text is compared instead;
    ``id_field`` names the item in logs and annotations (its URL, usually); ``title_field``
    and ``timestamp_field`` are optional; ``window`` compares an item only with those within
    that much time (``"90d"``); ``mode`` is ``"drop"`` or ``"annotate"``; ``worker`` is
    ``"process"`` (decide in a process of its own) or ``"thread"``.
    """

    def __init__(
        self,
        *,
        store: str = "memory://",
        text_field: str = "text",
        html_field: str | None = None,
        title_field: str | None = None,
        id_field: str = "url",
        timestamp_field: str | None = None,
        window: str | float | None = None,
        threshold: float = 0.6,
        title_threshold: float = 0.75,
        mode: Mode = "drop",
        worker: WorkerKind = "process",
        stats: StatsCollector | None = None,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be 'drop' or 'annotate', got {mode!r}")
        if worker not in WORKERS:
            raise ConfigError(f"worker must be 'process' or 'thread', got {worker!r}")
        self.mode: Mode = mode
        self.worker: WorkerKind = worker
        self.text_field = cast(str, _field("text_field", text_field, required=True))
        self.html_field = _field("html_field", html_field, required=False)
        self.title_field = _field("title_field", title_field, required=False)
        self.id_field = cast(str, _field("id_field", id_field, required=True))
        self.timestamp_field = _field("timestamp_field", timestamp_field, required=False)
        self.stats = stats
        checked = tuple(
            (name, coerce_setting(name, value)) for name, value in (settings or {}).items()
        )
        self.options = Options(
            store,
            self.html_field is not None,
            parse_window(window),
            threshold,
            title_threshold,
            checked,
        )
        self.options.config()  # a setting out of its range fails now
        # a store, setting or extractor that fails, fails now; a thread worker keeps it
        local = Worker(self.options)
        if worker == "process":
            local.close()
        self._local = local if worker == "thread" else None
        self.counts = {"kept": 0, "extends": 0, "duplicates": 0, "errors": 0}
        self._run = secrets.token_hex(5)  # this process's part of every store id
        self._seen = 0
        self._logged: set[str] = set()
        self._queue: list[tuple[Job, Deferred[Outcome]]] = []
        self._busy = False
        self._executor: Executor | None = None

    # -- built by Scrapy ------------------------------------------------------------------

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupPipeline:
        """Read the ``NEARDUP_*`` settings; a wrong one is a ConfigError naming it, which
        stops the crawl at start-up with that one line in the log (not a traceback)."""
        try:
            return cls._from_settings(crawler)
        except ConfigError as exc:
            _one_line(exc)
            raise

    @classmethod
    def _from_settings(cls, crawler: Crawler) -> NearDupPipeline:
        s = crawler.settings
        if not s.getbool("NEARDUP_ENABLED", True):
            logger.info("neardup: off (NEARDUP_ENABLED = False)", extra={"crawler": crawler})
            raise NotConfigured
        mode = s.get("NEARDUP_MODE", "drop")
        if mode not in MODES:
            raise ConfigError(f"NEARDUP_MODE must be 'drop' or 'annotate', got {mode!r}")
        worker = s.get("NEARDUP_WORKER", "process")
        if worker not in WORKERS:
            raise ConfigError(f"NEARDUP_WORKER must be 'process' or 'thread', got {worker!r}")
        window = s.get("NEARDUP_WINDOW") or None
        try:
            parse_window(window)
        except ConfigError as exc:
            raise ConfigError(f"NEARDUP_WINDOW: {exc}") from None
        store = s.get("NEARDUP_STORE") or default_store(s.get("JOBDIR"))
        fields = {}
        for key, name, default in (
            ("text_field", "NEARDUP_TEXT_FIELD", "text"),
            ("html_field", "NEARDUP_HTML_FIELD", None),
            ("title_field", "NEARDUP_TITLE_FIELD", None),
            ("id_field", "NEARDUP_ID_FIELD", "url"),
            ("timestamp_field", "NEARDUP_TIMESTAMP_FIELD", None),
        ):
            fields[key] = _field(name, s.get(name, default), required=default is not None)
        threshold = _fraction("NEARDUP_THRESHOLD", s.get("NEARDUP_THRESHOLD", 0.6))
        title = _fraction("NEARDUP_TITLE_THRESHOLD", s.get("NEARDUP_TITLE_THRESHOLD", 0.75))
        extra = _extra_settings(s)
        for name, flag in (
            ("threshold", "NEARDUP_THRESHOLD"),
            ("title_threshold", "NEARDUP_TITLE_THRESHOLD"),
        ):
            if name in extra:
                if s.get(flag) is not None:
                    raise ConfigError(f"give {name} once: {flag} or NEARDUP_SET, not both")
                value = extra.pop(name)
                if name == "threshold":
                    threshold = _fraction("NEARDUP_SET['threshold']", value)
                else:
                    title = _fraction("NEARDUP_SET['title_threshold']", value)
        try:
            Options("memory://", False, None, threshold, title, tuple(extra.items())).config()
        except ConfigError as exc:
            raise ConfigError(f"NEARDUP_SET: {exc}") from None
        if not isinstance(store, str):
            raise ConfigError(f"NEARDUP_STORE must be a store URL (a str), got {store!r}")
        try:
            pipeline = cls(
                store=store,
                window=window,
                threshold=threshold,
                title_threshold=title,
                mode=mode,
                worker=worker,
                stats=crawler.stats,
                settings=extra,
                **fields,  # type: ignore[arg-type]
            )
        except (ConfigError, StoreError) as exc:  # at start-up, a store that fails is a setting
            raise ConfigError(f"NEARDUP_STORE = {redacted(store)!r}: {exc}") from None
        logger.info(
            "neardup: %s near-duplicate items (store %s, compared by %s)",
            "dropping" if mode == "drop" else "annotating",
            redacted(store),
            f"the main text of {fields['html_field']!r}"
            if fields["html_field"]
            else repr(fields["text_field"]),
            extra={"crawler": crawler},
        )
        return pipeline

    def open_spider(self, spider: object = None) -> None:
        """Start the worker process (it gets ready while the first pages download)."""
        self._start()

    def close_spider(self, spider: object = None) -> None:
        """Log a summary, then stop the worker, which closes the store."""
        c = self.counts
        logger.info(
            "neardup: kept %d, duplicates %d, errors %d",
            c["kept"],
            c["duplicates"],
            c["errors"],
        )
        self.close()

    def close(self) -> None:
        """Stop the worker process, which closes the store (every item has been decided by
        now: Scrapy closes the pipeline after the last item)."""
        executor, self._executor = self._executor, None
        note = None
        if executor is not None and self._local is None:
            try:
                note = executor.submit(_close_worker).result()
            except Exception as exc:  # a worker that died has nothing left to close
                logger.debug("neardup: the worker could not close its store: %r", exc)
        if executor is not None:
            executor.shutdown(wait=True)
        if self._local is not None:
            note = self._local.close()
            self._local = None
        if note is not None:
            logger.warning("neardup: %s", note)

    # -- items ----------------------------------------------------------------------------

    async def process_item(self, item: Any, spider: object = None) -> Any:
        """Keep the first copy of a story; drop or mark later copies. An item without usable
        text passes through and is counted in ``neardup/errors``."""
        adapter = ItemAdapter(item)
        job = self._job(adapter)
        if isinstance(job, Unusable):
            self._error(job)
            return item
        outcome = await maybe_deferred_to_future(self._submit(job))
        if isinstance(outcome, Unusable):
            self._error(outcome)
            return item
        return self._apply(item, adapter, outcome)

    def _job(self, adapter: ItemAdapter) -> Job | Unusable:
        """Read an item's fields (cheap: the extraction happens on the worker)."""
        self._seen += 1

        def get(name: str) -> Any:  # a dotted name reads a nested field, as dedup does
            return field_value(adapter, name)[1]

        ident = get(self.id_field)
        if not isinstance(ident, str) or not ident:
            ident = f"item-{self._seen}"
        store_id = f"{ident} @{self._run}-{self._seen}"
        html: str | bytes | None = None
        text: str | None = None
        if self.html_field is not None and get(self.html_field) is not None:
            raw = get(self.html_field)
            html = raw if isinstance(raw, bytes) else _text_value(raw)
            if not html:
                return Unusable("no_text", f"{ident}: field {self.html_field!r} holds no HTML")
        else:
            value = get(self.text_field)
            text = _text_value(value)
            if text is None or not text.strip() or no_text(text):
                if value is None:
                    what = "is missing"
                elif isinstance(value, bytes | bytearray):
                    what = (
                        "holds bytes, not a string: decode them (response.text), or name the "
                        "field in NEARDUP_HTML_FIELD to compare its main text"
                    )
                else:
                    what = f"holds no text ({value!r:.40})"
                return Unusable("no_text", f"{ident}: field {self.text_field!r} {what}")
        title = None
        if self.title_field is not None:
            title = _text_value(get(self.title_field))
        ts = None
        if self.timestamp_field is not None:
            raw_ts = get(self.timestamp_field)
            try:
                ts = timestamp_or_none(raw_ts)
            except InputError as e:
                return Unusable("bad_timestamp", f"{ident}: field {self.timestamp_field!r}: {e}")
        return Job(store_id, text, html, title, ts)

    def _apply(self, item: Any, adapter: ItemAdapter, d: Decision) -> Any:
        """Count a decision, log it and drop or mark the item."""
        mine = shown_id(d.id)
        if d.is_duplicate:
            self._count("duplicates")
            other = shown_id(d.duplicate_of or d.cluster)
            why = f"near-duplicate of {other} ({d.measure} {d.score:.2f})"
            if "duplicate" not in self._logged:
                self._logged.add("duplicate")
                logger.info(
                    "neardup: %s %s, a %s. Further duplicates are logged at DEBUG "
                    "(LOG_LEVEL = 'DEBUG' shows them) and counted in the stat "
                    "neardup/duplicates; %s",
                    "dropped" if self.mode == "drop" else "marked",
                    mine,
                    why,
                    f"NEARDUP_MODE = 'annotate' keeps them, marked with {DUPLICATE_OF} and {SCORE}"
                    if self.mode == "drop"
                    else f"they are kept, marked with {DUPLICATE_OF} and {SCORE}",
                )
            else:
                logger.debug("neardup: %s is a %s", mine, why)
            if self.mode == "drop":
                raise DropItem(why, log_level="DEBUG")
            self._annotate(adapter, other, d.score)
        else:
            self._count("kept")
            extends = None
            if d.extends is not None:  # a story seen before, with text of its own: kept
                self._count("extends")
                extends = shown_id(d.extends)
                logger.debug("neardup: kept %s, which extends %s (%s %.2f)", mine, extends,
                             d.measure, d.score)  # fmt: skip
            if self.mode == "annotate":
                self._annotate(adapter, None, d.score if extends else 0.0, extends)
        return item

    def _annotate(
        self,
        adapter: ItemAdapter,
        duplicate_of: str | None,
        score: float,
        extends: str | None = None,
    ) -> None:
        try:
            adapter[DUPLICATE_OF] = duplicate_of
            adapter[SCORE] = round(score, 4)
            adapter[EXTENDS] = extends
        except KeyError:
            if extends is None and adapter.get(DUPLICATE_OF, 0) == duplicate_of:
                return  # an item type without the field neardup_extends, and nothing to say
            name = type(adapter.item).__name__
            self._error(
                Unusable(
                    "annotate",
                    f"cannot mark items of type {name}: declare the fields {DUPLICATE_OF}, "
                    f"{SCORE} and {EXTENDS} in it, or use dict items",
                ),
                count=False,
            )

    def _count(self, key: str) -> None:
        self.counts[key] += 1
        if self.stats is not None:
            self.stats.inc_value(f"neardup/{key}")

    def _error(self, problem: Unusable, *, count: bool = True) -> None:
        """Count an item that was passed through undecided; the first of each kind is a
        warning, the rest go to DEBUG."""
        if count:
            self._count("errors")
        if self.stats is not None:
            self.stats.inc_value(f"neardup/errors/{problem.reason}")
        if problem.reason not in self._logged:
            self._logged.add(problem.reason)
            logger.warning(
                "neardup: item passed through undecided: %s (more of these are logged at "
                "DEBUG and counted in neardup/errors/%s)",
                problem.message,
                problem.reason,
            )
        else:
            logger.debug("neardup: item passed through undecided: %s", problem.message)

    # -- the worker -----------------------------------------------------------------------

    def _start(self) -> Executor:
        if self._executor is None and self._local is not None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="neardup")
        elif self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                # spawn: a fork of a process running a reactor and threads is not safe
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self.options,),
            )
        return self._executor

    def _submit(self, job: Job) -> Deferred[Outcome]:
        d: Deferred[Outcome] = Deferred()
        self._queue.append((job, d))
        if not self._busy:
            self._flush()
        return d

    def _flush(self) -> None:
        """Hand what is queued to the worker (on the reactor thread); one batch at a time,
        so items that arrive meanwhile form the next batch, in order."""
        from twisted.internet import reactor

        batch, self._queue = self._queue[:BATCH], self._queue[BATCH:]
        self._busy = True
        try:
            jobs = [job for job, _ in batch]
            executor = self._start()
            if self._local is not None:
                future = executor.submit(self._local.decide, jobs)
            else:
                future = executor.submit(_decide_in_worker, jobs)
        except Exception as exc:  # the worker is gone (BrokenProcessPool) or shut down
            self._done(exc, batch)
            return
        future.add_done_callback(lambda f: cast(Any, reactor).callFromThread(self._done, f, batch))

    def _done(
        self,
        result: Future[list[Outcome]] | Exception,
        batch: list[tuple[Job, Deferred[Outcome]]],
    ) -> None:
        self._busy = False
        outcomes: list[Outcome]
        try:
            if isinstance(result, Exception):
                raise result
            outcomes = result.result()
        except Exception as exc:
            problem = Unusable("worker", f"the neardup worker failed: {exc!r}")
            outcomes = [problem] * len(batch)
        if self._queue:
            self._flush()
        for (_, d), outcome in zip(batch, outcomes, strict=True):
            d.callback(outcome)


@dataclass(frozen=True, slots=True)
class Options:
    """What the worker needs to decide: the store URL, whether items come as HTML, the
    window (seconds), the thresholds and the other settings (``NEARDUP_SET``: (name, value)
    pairs, checked)."""

    store: str
    html: bool
    window: float | None
    threshold: float
    title_threshold: float
    settings: tuple[tuple[str, object], ...] = ()

    def config(self) -> DedupConfig:
        """The DedupConfig these options describe (ConfigError when a value is out of range)."""
        return make_config(
            {
                "threshold": self.threshold,
                "title_threshold": self.title_threshold,
                **dict(self.settings),
            }
        )


class Worker:
    """Decides batches of items: owns the Deduper (and the main-text extractor). The
    pipeline runs one in a process of its own; it works in this process too.

    >>> w = Worker(Options("memory://", False, None, 0.6, 0.75))
    >>> text = "The Old Mill Bridge reopened to traffic on Saturday after a two-year rebuild."
    >>> [d.duplicate_of for d in w.decide([Job("a", text, None, None, None),
    ...                                    Job("b", "UPDATE: " + text, None, None, None)])]
    [None, 'a']
    >>> w.close()
    """

    def __init__(self, options: Options) -> None:
        config = options.config()
        self.extract = _load_extractor() if options.html else None
        self.deduper = Deduper(config, store=options.store, window=options.window, explain=False)

    def close(self) -> str | None:
        """Close the store; what to tell the user of its chrome table when it is crowded
        (:func:`~neardup.engine.templates.crowding`)."""
        cfg = self.deduper.config
        note = crowding(
            self.deduper.chrome_load(), cfg.common_after, cfg.chrome_passage, cfg.chrome_window
        )
        self.deduper.close()
        return note

    def decide(self, jobs: list[Job]) -> list[Outcome]:
        """Decide a batch of items, in order.

        Extraction problems and store errors are reported item by item: a batch that fails
        is decided again one item at a time (ids make that safe: the store returns the
        decision it already made for an id)."""
        out: list[Outcome | None] = [None] * len(jobs)
        docs: list[Mapping[str, object]] = []
        where: list[int] = []
        for i, job in enumerate(jobs):
            text = job.text
            if job.html is not None and self.extract is not None:
                try:
                    text = self.extract(job.html)
                except Exception as exc:  # a broken page must not stop the others
                    out[i] = Unusable("extract", f"{shown_id(job.id)}: {exc!r}")
                    continue
                if not text or not text.strip() or no_text(text):
                    out[i] = Unusable(
                        "no_text", f"{shown_id(job.id)}: no main text found in its HTML"
                    )
                    continue
            docs.append(
                {"id": job.id, "text": text, "title": job.title, "timestamp": job.timestamp}
            )
            where.append(i)
        decided: list[Outcome]
        try:
            decided = list(self.deduper.check_and_add_many(docs))
        except Exception:
            decided = []
            for one in docs:
                try:
                    decided.append(self.deduper.check_and_add_many([one])[0])
                except Exception as exc:  # reported as text: any exception crosses processes
                    decided.append(Unusable("store", f"{type(exc).__name__}: {exc}"))
        for i, d in zip(where, decided, strict=True):
            out[i] = d
        return cast(list[Outcome], out)


_worker: Worker | None = None  # the worker process's Worker


def _start_worker(options: Options) -> None:
    """Set up the worker process; Ctrl-C is for the crawl, which stops the worker itself
    once the items in flight are decided."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker = Worker(options)


def _decide_in_worker(jobs: list[Job]) -> list[Outcome]:
    if _worker is None:
        raise RuntimeError("the neardup worker was not started")
    return _worker.decide(jobs)


def _close_worker() -> str | None:
    global _worker
    note = None
    if _worker is not None:
        note = _worker.close()
        _worker = None
    return note


def default_store(jobdir: str | None) -> str:
    """The store when ``NEARDUP_STORE`` is not set: a SQLite file in the job directory, so a
    paused crawl resumes with what it had seen; memory without one.

    >>> default_store(None)
    'memory://'
    """
    if not jobdir:
        return "memory://"
    folder = os.path.abspath(jobdir)
    os.makedirs(folder, exist_ok=True)
    return sqlite_url(os.path.join(folder, STORE_FILE))
