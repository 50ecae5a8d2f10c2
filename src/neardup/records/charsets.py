"""The charset of a page's bytes, read as browsers read it: the byte order mark, then what
the HTTP header or the page's ``<meta>`` declares, each label taken as the WHATWG Encoding
Standard takes it (``gb2312`` and ``gbk`` as GB 18030, ``big5`` as Big5-HKSCS,
``iso-8859-1`` and ``us-ascii`` as windows-1252, ``shift_jis`` as windows-31J).

One rule for every reader of HTML: a folder's pages (:func:`~neardup.records.decode_file`),
WARC responses and the Scrapy add-on's HTML field (:mod:`neardup.records.extract`).

>>> page = "<p>“Café” — 5 €</p>".encode("cp1252")
>>> decode_html(page, "iso-8859-1")
'<p>“Café” — 5 €</p>'
>>> decode_html("<meta charset=big5><p>立法會</p>".encode("big5"))
'<meta charset=big5><p>立法會</p>'
>>> decode_html(b"<p>\\xc1\\xa2</p>") is None  # not UTF-8, nothing declared: left to a guess
True
"""

from __future__ import annotations

import codecs
import re

from ..errors import ConfigError
from .streams import text_encoding

__all__ = ["META_CHARSET", "codec_of", "decode_declared", "decode_html", "text_codec"]

_BOM = codecs.BOM_UTF8
#: A ``<meta charset=…>`` or ``<meta http-equiv=Content-Type content="…; charset=…">``.
META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
#: Labels the WHATWG Encoding Standard decodes as another (larger) codec than Python's of
#: that name: what the page's author's browser showed.
_ALIASES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "csgb2312": "gb18030",
    "big5": "big5hkscs",
    "big5-hkscs": "big5hkscs",
    "x-x-big5": "big5hkscs",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "latin1": "cp1252",
    "l1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
}
_UNDEFINED = "neardup-c1"


def _c1(error: UnicodeError) -> tuple[str, int]:
    # windows-1252 leaves five bytes undefined; WHATWG decodes them as the C1 controls
    if isinstance(error, UnicodeDecodeError):
        return chr(error.object[error.start]), error.start + 1
    raise error


codecs.register_error(_UNDEFINED, _c1)


def codec_of(label: str) -> str | None:
    """Python's codec for a charset label as a page or an HTTP header gives it, or None when
    the label names none.

    >>> codec_of("GBK"), codec_of(" 'UTF-8' "), codec_of("x-unknown")
    ('gb18030', 'utf-8', None)
    """
    name = label.strip().strip("\"'").strip().lower()
    name = _ALIASES.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def text_codec(label: str | None) -> str | None:
    """The codec ``--encoding`` names for JSONL and CSV inputs (None: UTF-8, the default);
    ConfigError for a name that is no codec.

    >>> text_codec("GBK"), text_codec("utf8"), text_codec(None)
    ('gb18030', None, None)
    """
    if label is None:
        return None
    codec = codec_of(label)
    if codec is None:
        raise ConfigError(
            f"--encoding {label!r} names no text encoding (gbk, big5, cp1252, shift_jis ...)"
        )
    return None if codec == "utf-8" else codec


def decode_declared(data: bytes, label: str) -> str:
    """``data`` in the charset ``label`` names; LookupError when it names none,
    UnicodeDecodeError when the bytes are not valid in it."""
    codec = codec_of(label)
    if codec is None:
        raise LookupError(label)
    return data.decode(codec, _UNDEFINED if codec == "cp1252" else "strict")


def decode_html(data: bytes, declared: str | None = None) -> str | None:
    """A page's HTML as text: by its byte order mark; as UTF-8 when it is valid UTF-8; else in
    the charset ``declared`` (an HTTP header's) names, or else its ``<meta>``, when the bytes
    are valid in it; else None (the caller guesses, or says so)."""
    if data.startswith(_BOM):
        return data[len(_BOM) :].decode("utf-8", "replace")
    found = text_encoding(data[:4])
    if found is not None:
        return data.decode(found[0], "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    meta = META_CHARSET.search(data[:4096])
    labels = [declared] if declared else []
    if meta is not None:
        labels.append(meta.group(1).decode("ascii"))
    for label in labels:
        try:
            return decode_declared(data, label)
        except (LookupError, UnicodeDecodeError):
            continue
    return None
