"""The JSON bodies of the HTTP service: what it accepts and what it answers, as pydantic
models, so that the OpenAPI document says exactly what the endpoints do."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, field_validator

from ..errors import InputError
from ..records import NO_TEXT, no_text, parse_timestamp

#: The most documents ``POST /v1/documents:batch`` takes at once.
MAX_BATCH = 1000
#: The longest document id accepted.
MAX_ID = 1024
# numbers a timestamp can be: seconds from the year 1, up to milliseconds of the year 9999
_EARLIEST = -62135596800
_LATEST_MS = 253402300799999
#: numeric strings of a timestamp that are all within those bounds: up to 14 digits (but
#: eight alone: a date), up to 10 after a minus sign, a fraction or not
_SECONDS_STRING = (
    r"^\s*(?:\+?(?:\d{1,7}|\d{9,14})(?:\.\d*)?|\+?\d{8}\.\d*|\+\d{8}"
    r"|-\d{1,10}(?:\.\d*)?|[+-]?\.\d+)\s*$"
)


def _no_surrogates(value: str) -> str:
    """Refuse lone surrogates (``"\\ud800"`` in JSON): no store can keep them."""
    for i, ch in enumerate(value):
        if "\ud800" <= ch <= "\udfff":
            raise ValueError(f"has a lone surrogate (U+{ord(ch):04X}) at position {i}")
    return value


class DocumentIn(BaseModel):
    """One document to check or add."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "https://news.example.cn/2026/0118/metro.html",
                    "text": "临江市轨道交通5号线一期工程今日正式开通初期运营……",
                    "title": "临江地铁5号线一期今日开通",
                    "timestamp": "2026-01-18T10:05:00+08:00",
                }
            ]
        }
    )

    id: Annotated[
        StrictStr,
        Field(
            min_length=1,
            max_length=MAX_ID,
            description="Your id for the document (a URL is fine); adding an id again returns "
            "its first decision and changes nothing.",
        ),
    ]
    text: Annotated[
        StrictStr,
        Field(
            min_length=1,
            description="The text or HTML of the document. A text of only whitespace, or "
            "one that is nothing once normalized (only markup, character references like "
            "&nbsp;, invisible characters like U+200B or control characters like NUL), is "
            "refused (422), as `neardup "
            "dedup` makes it an error record.",
            json_schema_extra={"pattern": r"\S"},  # checked, with its message, by _some_text
        ),
    ]
    title: Annotated[
        StrictStr | None,
        Field(description="The headline; kept with the document and shown on the page."),
    ] = None
    timestamp: Annotated[
        Annotated[float, Field(ge=_EARLIEST, le=_LATEST_MS)]
        | Annotated[StrictStr, Field(json_schema_extra={"format": "date-time"})]
        | Annotated[
            StrictStr,
            Field(
                # the numeric strings every one of which is a time of the years 1 to 9999
                # (more are read: 1e9, more digits, and eight digits alone as a date)
                pattern=_SECONDS_STRING,
                description="Seconds (or milliseconds) since the epoch, as a string.",
            ),
        ]
        | Annotated[StrictStr, Field(pattern=r"^\s*$", description="No timestamp.")]
        | None,
        Field(
            description="When it was published: seconds (or milliseconds) since the epoch, or "
            "an ISO 8601 time such as 2026-01-18T10:05:00+08:00. Documents are compared only "
            "with those within the service's window of it; the time it is added when absent "
            "(or an empty string).",
        ),
    ] = None

    @field_validator("id", "title")
    @classmethod
    def _unicode(cls, value: str | None) -> str | None:
        return None if value is None else _no_surrogates(value)

    @field_validator("text")
    @classmethod
    def _some_text(cls, value: str) -> str:
        """As ``neardup dedup`` reads records: a text of only whitespace, or nothing once
        normalized (markup, ``&nbsp;``, U+200B), is no document."""
        if not value.strip():
            raise ValueError("is only whitespace")
        if no_text(value):
            raise ValueError(NO_TEXT)
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _seconds(cls, value: Any) -> float | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None  # as `neardup dedup` reads an empty date: no timestamp
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError("must be a number of seconds since the epoch or an ISO 8601 time")
        try:
            return parse_timestamp(value)
        except InputError as e:
            raise ValueError(str(e)) from None

    def as_mapping(self) -> dict[str, object]:
        """What :meth:`neardup.Deduper.check_and_add_many` takes."""
        return {"id": self.id, "text": self.text, "title": self.title, "timestamp": self.timestamp}


class BatchIn(BaseModel):
    """Up to 1,000 documents, decided in order in one atomic step."""

    documents: Annotated[list[DocumentIn], Field(min_length=1, max_length=MAX_BATCH)]


class CompareIn(BaseModel):
    """Two texts to compare."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "a": "央视网消息：黑龙江深挖冰雪资源，推动冰雪经济高质量发展。",
                    "b": "转载｜央視網消息：黑龍江深挖冰雪資源，推動冰雪經濟高質量發展！",
                }
            ]
        }
    )

    a: Annotated[StrictStr, Field(description="The first text (plain text or HTML).")]
    b: Annotated[StrictStr, Field(description="The second text.")]
    raw: Annotated[
        StrictBool,
        Field(description="Compare the texts as given, without normalization."),
    ] = False


class Passage(BaseModel):
    """A stretch of text found in both: at ``a_start`` in a, at ``b_start`` in b."""

    text: str
    a_start: int
    b_start: int
    length: int


class Scores(BaseModel):
    """Every measure's similarity, 0 to 1 (1 = identical): what ``neardup compare --json``
    prints."""

    cosine: float
    euclidean: float
    common: float
    levenshtein: float
    simhash: float
    lcsubstr: float
    mcc: float
    contiguity: float
    jaccard: float
    containment: float
    coverage: float


class DedupOut(BaseModel):
    """What ``neardup dedup`` decides for ``b`` arriving after ``a``, on the texts as the
    engine compares them (normalized, boilerplate lines stripped: ``a`` and ``b`` here;
    passage offsets are in those)."""

    summary: str
    same_story: Annotated[bool, Field(description="The two are one story.")]
    is_copy: Annotated[bool, Field(description="b is a copy of a: dedup drops it.")]
    score: Annotated[
        float,
        Field(
            description="The coverage of the shorter text (or, for titles, the character measure)."
        ),
    ]
    copy_score: Annotated[float, Field(description="How much of b's own text a covers.")]
    measure: str
    edges: Annotated[
        bool,
        Field(description="What they share lies only at their edges (chrome): two stories."),
    ]
    a: str
    b: str
    counted: list[Passage]
    chrome: list[Passage]


class CompareOut(BaseModel):
    """Every measure for the pair and the passages the two share, longest first, and what
    the dedup engine decides for ``b`` after ``a``.

    Passage offsets are in ``a`` and ``b`` as returned: the texts after normalization
    (HTML to text, full-width to half-width, case and Traditional Chinese folded)."""

    scores: Scores
    passages: list[Passage]
    a: str
    b: str
    dedup: DedupOut


class DecisionOut(BaseModel):
    """The verdict on one document: dropped as a copy (``is_duplicate``), or kept — as a new
    story, or as a new text of a story seen before (``extends``)."""

    id: str
    is_duplicate: Annotated[
        bool,
        Field(
            description="A copy of an earlier document, bringing nothing new: drop it. False "
            "for a new story and for a document that extends one with text of its own."
        ),
    ]
    duplicate_of: Annotated[
        str | None, Field(description="The earlier document it copies; null when kept.")
    ]
    extends: Annotated[
        str | None,
        Field(
            default=None,
            description="Kept, and it repeats an earlier document and adds text to it (a reply "
            "quoting its parent, a full article after an excerpt): that document. It joins "
            "that document's cluster unless that document is a hub, text that different "
            "stories share (then its cluster is its own).",
        ),
    ]
    cluster: Annotated[str, Field(description="The id of the document kept for its story.")]
    score: Annotated[
        float,
        Field(
            description="For a copy, how much of this document its match covers; otherwise how "
            "much of the shorter text the other covers (0 for a new story)."
        ),
    ]
    measure: Annotated[
        str | None, Field(description="How that score was measured (coverage, identical, …).")
    ]
    evidence: Annotated[
        list[str],
        Field(description="The passages it shares with its match that counted, longest first."),
    ]
    chrome: Annotated[
        list[str],
        Field(
            default_factory=list,
            description="Passages it shares with its match that were set aside as chrome "
            "(text recurring across different stories: sign-offs, bios, footers).",
        ),
    ]


class BatchOut(BaseModel):
    """The decisions of a batch, in the order of its documents."""

    decisions: list[DecisionOut]
    kept: Annotated[
        int,
        Field(
            description="How many of the decisions keep their document (an id given twice, "
            "or added before, is counted with the decision it was added with)."
        ),
    ]
    duplicates: Annotated[int, Field(description="How many of the decisions drop a copy.")]


class DocumentOut(DecisionOut):
    """A stored document: its decision, what the store keeps of it, and its cluster's size."""

    title: str | None
    timestamp: Annotated[float, Field(description="Seconds since the epoch.")]
    text: Annotated[
        str | None,
        Field(
            description="The text as compared (normalized, site boilerplate removed); null "
            "when the store no longer has it."
        ),
    ]
    cluster_size: int


class Deleted(BaseModel):
    """A document the store has forgotten."""

    id: str
    deleted: bool


class ClusterSummary(BaseModel):
    """One cluster: the id of its kept document, its size, and how it starts."""

    id: str
    size: int
    title: str | None
    excerpt: str | None


class ClusterList(BaseModel):
    """Clusters, largest first."""

    clusters: list[ClusterSummary]
    limit: int
    offset: int


class Span(BaseModel):
    """A stretch of a member's text that the cluster's kept document also has."""

    start: int
    length: int


class Member(BaseModel):
    """One document of a cluster."""

    id: str
    is_duplicate: bool
    duplicate_of: str | None
    extends: Annotated[
        str | None,
        Field(default=None, description="Kept with text of its own: the member it extends."),
    ]
    score: float
    measure: str | None
    title: str | None
    timestamp: float
    text: Annotated[str | None, Field(description="The text as compared, when stored.")]
    shared: Annotated[
        list[Span],
        Field(description="Where this member's text shares passages with the kept document."),
    ]


class ClusterOut(BaseModel):
    """The members of one cluster, earliest first (``limit`` of them from ``offset``)."""

    id: str
    size: int
    members: list[Member]
    limit: int
    offset: int


class Health(BaseModel):
    """The service is up and can reach its store."""

    status: str
    version: str
    store: Annotated[str, Field(description="The kind of store: memory, sqlite or redis.")]


class FieldProblem(BaseModel):
    """What is wrong with one field of a request."""

    field: str
    message: str


class ErrorOut(BaseModel):
    """Every error the service answers: a short code, a sentence, and for a 422 the field."""

    error: Annotated[
        str,
        Field(
            description="bad_host, unauthorized, not_found, method_not_allowed, too_large, "
            "invalid, busy, unavailable, damaged or internal"
        ),
    ]
    message: str
    field: str | None = None
    problems: list[FieldProblem] = Field(default_factory=list)
