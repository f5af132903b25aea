"""Is it HTML, and in which encoding: bytes from the network to a Python str.

The order is the reference's (docs/tools.md): a byte-order mark, the `charset` of the
Content-Type header, `<meta charset>` or `<meta http-equiv="Content-Type">` in the first 4 KiB,
UTF-8 when the bytes are valid UTF-8, else windows-1252. A name that names no known encoding is
skipped, and the next step decides; so is, mm's choice, a declared encoding the bytes are not
text in (`_fits`: a page saying UTF-8 whose bytes are windows-1251), and the result says which
was read instead (`Decoded.note`).

One step is mm's own, an extension of that order: before falling back to windows-1252, a page
that declares nothing is given to charset-normalizer, and its guess is taken only when it is the
encoding of a script other than Latin (Cyrillic, Greek, Hebrew, Arabic, Thai, Chinese, Japanese,
Korean). Measured on real pages re-encoded without their declarations, that decodes half of the
Japanese, Chinese and Russian ones that windows-1252 turned to mojibake and breaks none of the real
windows-1252 pages; taking every guess broke four of six of those (a German page reads as
windows-1250 to it, and a Latin guess cannot be told from a wrong one). A Latin-script page in
another Latin encoding (Czech in windows-1250) stays windows-1252, as docs/tools.md has it, and
so does a page with too few bytes above 0x7F to tell (`GUESS_EVIDENCE`). Its guesses are mapped
to the web's encodings (`euc_jis_2004` is EUC-JP); a page's `lang`, or else the country of its
domain as browsers use it for their fallback, picks among them (`guessed_encoding`).

Names are read as browsers read them (the WHATWG Encoding Standard), which is not always how
Python reads them: `iso-8859-1` and `ascii` mean windows-1252, `shift_jis` means Microsoft's
superset (cp932), `gb2312` means gb18030, a `<meta>` saying UTF-16 means UTF-8. Python codecs
that are not text encodings on the web (`base64`, `rot13`, `utf-7`, `unicode_escape`…) count as
unknown names. windows-1252 keeps the five bytes it leaves undefined as the C1 controls of the
same value, as browsers do, rather than failing on them.

A page is "undecodable" (error 1) when what comes out is not text: more than a tenth of the
start made of NUL, replacement characters or other control characters, as a binary file served
as text/html gives.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from mm_tui.tools.fetch.errors import CONVERSION, FetchError

HTML_TYPES = ("text/html", "application/xhtml+xml")
PRESCAN_BYTES = 4096

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)

# WHATWG labels whose meaning differs from Python's, or that Python does not know.
_WHATWG = {
    **dict.fromkeys(
        "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
        "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252 "
        "x-user-defined".split(),
        "windows-1252",
    ),
    **dict.fromkeys(
        "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
        "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254".split(),
        "cp1254",
    ),
    **dict.fromkeys(
        "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874".split(), "cp874"
    ),
    **dict.fromkeys(
        "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis".split(), "cp932"
    ),
    **dict.fromkeys(
        "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
        "ksc_5601 windows-949".split(),
        "cp949",
    ),
    **dict.fromkeys(
        "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk "
        "gb18030".split(),
        "gb18030",
    ),
    **dict.fromkeys("big5 big5-hkscs cn-big5 csbig5 x-x-big5".split(), "big5hkscs"),
    **dict.fromkeys("csiso88598i iso-8859-8-i logical".split(), "iso8859-8"),
    **dict.fromkeys("csmacintosh mac macintosh x-mac-roman".split(), "mac-roman"),
    **dict.fromkeys("x-mac-cyrillic x-mac-ukrainian".split(), "mac-cyrillic"),
    **dict.fromkeys("koi8-ru koi8-u".split(), "koi8-u"),
    **dict.fromkeys("unicodefffe utf-16be".split(), "utf-16-be"),
    **dict.fromkeys(
        "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le".split(), "utf-16-le"
    ),
}

# The encodings of the WHATWG standard, by Python's canonical codec name: a label Python resolves
# to anything else (base64, utf-7, unicode_escape…) is unknown here.
_WEB_CODECS = frozenset(
    codecs.lookup(name).name
    for name in (
        "utf-8 cp866 iso8859-2 iso8859-3 iso8859-4 iso8859-5 iso8859-6 iso8859-7 iso8859-8 "
        "iso8859-10 iso8859-13 iso8859-14 iso8859-15 iso8859-16 koi8-r koi8-u mac-roman cp874 "
        "cp1250 cp1251 cp1252 cp1253 cp1254 cp1255 cp1256 cp1257 cp1258 mac-cyrillic gb18030 "
        "big5hkscs euc-jp iso2022-jp cp932 shift-jis cp949 euc-kr utf-16-be utf-16-le"
    ).split()
)

# The encodings of scripts other than Latin, by Python's canonical codec name: the guesses of
# `guessed_encoding` that are trusted.
_NON_LATIN_CODECS = frozenset(
    codecs.lookup(name).name
    for name in (
        "cp866 iso8859-5 koi8-r koi8-u mac-cyrillic cp1251 iso8859-7 cp1253 iso8859-8 cp1255 "
        "iso8859-6 cp1256 cp874 gb18030 big5hkscs euc-jp iso2022-jp cp932 cp949"
    ).split()
)
# charset-normalizer's names (Python codecs) for which the web has an encoding of its own: the
# variants it may name first for a page in the common encoding of the same script.
_GUESSES = {
    "euc_jis_2004": "euc-jp",
    "euc_jisx0213": "euc-jp",
    "shift_jis_2004": "cp932",
    "shift_jisx0213": "cp932",
    "iso2022_jp_1": "iso2022-jp",
    "iso2022_jp_2": "iso2022-jp",
    "iso2022_jp_2004": "iso2022-jp",
    "iso2022_jp_3": "iso2022-jp",
    "iso2022_jp_ext": "iso2022-jp",
    "cp950": "big5hkscs",
    "big5": "big5hkscs",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
}


def _codecs(names: str) -> tuple[str, ...]:
    """Python's names, in the order of preference (the commoner first)."""
    return tuple(codecs.lookup(name).name for name in names.split())


_CYRILLIC = _codecs("cp1251 koi8-r koi8-u iso8859-5 cp866 mac-cyrillic")
_GREEK = _codecs("iso8859-7 cp1253")
_HEBREW = _codecs("iso8859-8 cp1255")
_ARABIC = _codecs("cp1256 iso8859-6")
_JAPANESE = _codecs("cp932 euc-jp iso2022-jp")
_CHINESE = _codecs("gb18030 big5hkscs")
# The non-Latin scripts by the languages written in them (primary subtags of `lang`).
_SCRIPTS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys("ru uk be bg sr mk kk ky tg mn".split(), _CYRILLIC),
    "el": _GREEK,
    **dict.fromkeys("he iw yi".split(), _HEBREW),
    **dict.fromkeys("ar fa ur ps".split(), _ARABIC),
    "th": _codecs("cp874"),
    "ja": _JAPANESE,
    "zh": _CHINESE,
    "ko": _codecs("cp949"),
}
# A page that says no language is taken to be in the language of its country's domain, as
# browsers choose the fallback encoding by the top-level domain: a short Greek page on a `.gr`
# host has only Cyrillic guesses otherwise. Only the countries whose language is written in one
# of the scripts above; a generic domain (`.com`) says nothing.
_DOMAIN_LANGUAGES: dict[str, str] = {
    **dict.fromkeys("ru su by ua bg rs mk kz kg tj mn xn--p1ai".split(), "ru"),
    **dict.fromkeys("gr cy".split(), "el"),
    "il": "he",
    **dict.fromkeys("sa ae eg iq jo kw lb ly om qa sy ye bh dz ma tn sd".split(), "ar"),
    "ir": "fa",
    "th": "th",
    "jp": "ja",
    **dict.fromkeys("cn tw hk mo".split(), "zh"),
    "kr": "ko",
}
_HTML_LANG = re.compile(rb"""<html\b[^>]*?\s(?:xml:)?lang\s*=\s*["']?\s*([a-z]{2,3})\b""", re.I)
_CONTENT_LANGUAGE = re.compile(
    rb"""<meta\b[^>]*?http-equiv\s*=\s*["']?content-language["']?[^>]*?\scontent\s*=\s*"""
    rb"""["']?\s*([a-z]{2,3})\b""",
    re.I,
)
GUESS_BYTES = 65536  # what the guess reads: enough text to tell, bounded time on a large page
# Bytes above 0x7F a page needs before a guess is asked for: a few accented letters are too little
# to tell one encoding from another (`café “quoted”` reads as Arabic windows-1256 to the guess),
# while a page written in a non-Latin script has hundreds.
GUESS_EVIDENCE = 32

_HIGH_BYTES = bytes(range(0x80, 0x100))

_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_META = re.compile(rb"<meta[\s/]([^>]*)>?", re.IGNORECASE)
_COMMENT = re.compile(rb"<!--.*?(?:-->|$)", re.DOTALL)
_ATTRIBUTE = re.compile(
    rb"""([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s>]+)))?""", re.IGNORECASE
)
_TAG_END = (b" ", b">", b"\t", b"\n", b"\r", b"\x0c")
_HTML_SIGNATURES = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
)


def _c1_passthrough(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start : error.end].decode("latin-1"), error.end


codecs.register_error("mm-fetch-c1", _c1_passthrough)


def codec_for(label: str | None) -> str | None:
    """The Python codec for an encoding label as browsers read it, or None for an unknown one."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    if name in _WHATWG:
        return _WHATWG[name]
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    return info.name if info.name in _WEB_CODECS else None


def media_type(content_type: str | None) -> str:
    """`text/html` from `text/html; charset=utf-8`, lower-cased; "" when absent."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def header_charset(content_type: str | None) -> str | None:
    match = _CHARSET_PARAM.search(content_type or "")
    return match.group(1) if match else None


def _bom(data: bytes) -> tuple[str, int] | None:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec, len(bom)
    return None


def looks_like_html(data: bytes) -> bool:
    """The HTML patterns of the WHATWG sniffing rules (Go's http.DetectContentType uses the same),
    on the first 512 bytes after leading whitespace; a BOM is looked through."""
    bom = _bom(data)
    head = data[:1024]
    if bom and bom[0] != "utf-8":
        head = (
            data[bom[1] : bom[1] + 1024].decode(bom[0], errors="ignore").encode("latin-1", "ignore")
        )
    elif bom:
        head = data[bom[1] : bom[1] + 512]
    head = head.lstrip(b"\t\n\x0c\r ")[:512].lower()
    for signature in _HTML_SIGNATURES:
        # A signature ends at whitespace or `>`, so that `<pre>` is not `<p`; `<!--` needs nothing.
        if head.startswith(signature) and (
            signature == b"<!--" or head[len(signature) : len(signature) + 1] in _TAG_END
        ):
            return True
    return False


def meta_charset(data: bytes) -> str | None:
    """The encoding a <meta> declares in the first 4 KiB (labels as found, first one known)."""
    head = _COMMENT.sub(b"", data[:PRESCAN_BYTES])
    for meta in _META.finditer(head):
        attrs: dict[bytes, bytes] = {}
        for match in _ATTRIBUTE.finditer(meta.group(1)):
            name = match.group(1).lower()
            value = match.group(2) or match.group(3) or match.group(4) or b""
            attrs.setdefault(name, value)
        label = None
        if b"charset" in attrs:
            label = attrs[b"charset"].decode("latin-1")
        elif attrs.get(b"http-equiv", b"").strip().lower() == b"content-type":
            param = _CHARSET_PARAM.search(attrs.get(b"content", b"").decode("latin-1"))
            label = param.group(1) if param else None
        codec = codec_for(label)
        if codec is not None:
            # A page that declares UTF-16 in ASCII bytes is not UTF-16 (WHATWG).
            return "utf-8" if codec.startswith("utf-16") else codec
    return None


def language_hint(data: bytes) -> str | None:
    """The language the page says it is in (`<html lang>`, a Content-Language <meta>) in the
    first 4 KiB, as its primary subtag (`el` of `el-GR`); None when it says none."""
    head = _COMMENT.sub(b"", data[:PRESCAN_BYTES])
    match = _HTML_LANG.search(head) or _CONTENT_LANGUAGE.search(head)
    return match.group(1).decode("ascii").lower() if match else None


def domain_language(url: str) -> str | None:
    """The language of the country whose top-level domain the page's host is in, when that
    language is written in a non-Latin script (`el` for `https://www.example.gr/`); else None."""
    host = urlsplit(url).hostname or ""
    return _DOMAIN_LANGUAGES.get(host.rstrip(".").rpartition(".")[2].lower())


def _variants(sample: bytes, best: str, others: list[str]) -> list[str]:
    """`best` and those of `others` that read at least half of the sample's high bytes as it does:
    variants of one encoding (ISO-8859-7 and windows-1253), not two scripts that happen to rank
    alike (windows-1251 and KOI8-U, whose letters all differ)."""
    text = sample.decode(best, errors="replace")
    found = [best]
    for codec in others:
        other = sample.decode(codec, errors="replace")
        if len(other) != len(text):
            continue
        high = [(a, b) for a, b in zip(text, other, strict=True) if a >= "\x80" or b >= "\x80"]
        if sum(1 for a, b in high if a != b) * 2 <= len(high):
            found.append(codec)
    return found


def _letters(data: bytes, codec: str) -> int:
    """How many characters outside ASCII `data` decodes to letters in `codec`: of two variants
    of one encoding, the right one turns the page's high bytes into letters, the other into
    signs here and there (ISO-8859-7's `Ά` is windows-1253's `¶`)."""
    text = data.decode(codec, errors="replace")
    return sum(1 for ch in text if ch >= "\x80" and ch.isalpha())


def guessed_encoding(data: bytes, url: str = "") -> str | None:
    """charset-normalizer's guess for bytes that declare no encoding and are not UTF-8, when it is
    a non-Latin script's encoding (see the module's docstring); else None.

    Its guesses are mapped to the web's encodings (`euc_jis_2004` is EUC-JP). A page that names
    its language (`<html lang="el">`) has the first guess of that language's script taken over
    a better-ranked one of another, or that script's encoding when it has none of it (a short
    Greek page reads as Cyrillic to it); a page that names none has its domain's country's
    (`domain_language`) taken instead; and of the guesses ranked as well as the winner that
    are variants of it, the one that makes the most letters of the high bytes is taken."""
    sample = data[:GUESS_BYTES]
    if len(sample) - len(sample.translate(None, _HIGH_BYTES)) < GUESS_EVIDENCE:
        return None
    from charset_normalizer import from_bytes  # loaded only for the rare page that needs it

    matches: list[tuple[str, float]] = []  # (codec, chaos), best first
    for match in from_bytes(sample):
        codec = _guess_codec(match.encoding)
        if codec in _NON_LATIN_CODECS and all(codec != seen for seen, _ in matches):
            matches.append((codec, match.chaos))
    script = _SCRIPTS.get(language_hint(data) or domain_language(url) or "")
    if script is not None and matches:
        fitting = [m for m in matches if m[0] in script]
        if not fitting:
            # The guesses say a non-Latin script, the page says which: a short Greek page has
            # only Cyrillic guesses. (No guess at all: a Latin page, whatever its `lang`.)
            return max(script, key=lambda codec: _letters(sample, codec))
        matches = fitting
    if not matches:
        return None
    best, chaos = matches[0]
    peers = _variants(sample, best, [codec for codec, c in matches[1:] if c <= chaos])
    return max(peers, key=lambda codec: _letters(sample, codec))  # the first of equals: max's


def _guess_codec(name: str) -> str | None:
    """The web codec for a name charset-normalizer gives (Python's codec names)."""
    return codec_for(_GUESSES.get(name, name).replace("_", "-"))


def _decode_as(data: bytes, codec: str) -> str:
    """`data` in `codec`, an undecodable byte replaced (windows-1252: kept as its C1 control)."""
    errors = "mm-fetch-c1" if codec in ("windows-1252", "cp1252") else "replace"
    return data.decode(codec, errors=errors)


def _garbage(text: str) -> bool:
    """More than a tenth of the start made of NUL, replacement or other control characters."""
    start = text[:4096]
    garbage = sum(1 for ch in start if (ch < " " and ch not in "\t\n\r\f") or ch == "\ufffd")
    return bool(start) and garbage * 10 > len(start)


def _fits(data: bytes, codec: str) -> bool:
    """Whether the bytes are text in a declared `codec`: they decode in it, or nearly (a page in
    UTF-8 with a broken byte or two is still UTF-8: under a tenth of its characters outside
    ASCII replaced, and no garbage at the start). A declaration they do not fit is a mistake of
    the server or the page, skipped as an unknown name is."""
    try:
        data.decode(codec)
    except UnicodeDecodeError:
        pass
    except (LookupError, UnicodeError):
        return False
    else:
        return True
    try:
        text = _decode_as(data, codec)
    except (LookupError, UnicodeError):
        return False
    high = len(text) - len(text.encode("ascii", errors="ignore"))
    return text.count("\ufffd") * 10 <= high and not _garbage(text)


def _choice(data: bytes, content_type: str | None, url: str) -> tuple[str, int, tuple[str, ...]]:
    """The codec, the bytes of a BOM to skip, and the declared codecs skipped because the bytes
    are not text in them (`_fits`)."""
    bom = _bom(data)
    if bom is not None:
        return bom[0], bom[1], ()
    refused: list[str] = []
    for codec in (codec_for(header_charset(content_type)), meta_charset(data)):
        if codec is None or codec in refused:
            continue
        if _fits(data, codec):
            return codec, 0, tuple(refused)
        refused.append(codec)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return guessed_encoding(data, url) or "windows-1252", 0, tuple(refused)
    return "utf-8", 0, tuple(refused)


def choose_encoding(data: bytes, content_type: str | None, url: str = "") -> tuple[str, int]:
    """The codec to decode with and how many leading bytes (a BOM) to skip."""
    codec, skip, _ = _choice(data, content_type, url)
    return codec, skip


# Python's codec names as the web writes them, for the messages.
_WEB_NAMES = {
    "utf-8": "UTF-8",
    "cp932": "Shift_JIS",
    "euc_jp": "EUC-JP",
    "iso2022_jp": "ISO-2022-JP",
    "cp949": "EUC-KR",
    "big5hkscs": "Big5",
    "gb18030": "GB18030",
    "cp866": "IBM866",
    "koi8-r": "KOI8-R",
    "koi8-u": "KOI8-U",
    "mac-roman": "macintosh",
    "mac-cyrillic": "x-mac-cyrillic",
    "utf-16-le": "UTF-16LE",
    "utf-16-be": "UTF-16BE",
}


def web_name(codec: str) -> str:
    """`windows-1251` for cp1251, `ISO-8859-7` for iso8859-7: the name a page would declare."""
    if codec in _WEB_NAMES:
        return _WEB_NAMES[codec]
    if codec.startswith("cp") and codec[2:].isdigit():
        return f"windows-{codec[2:]}"
    if codec.startswith("iso8859-"):
        return "ISO-8859-" + codec.removeprefix("iso8859-")
    return codec


@dataclass(frozen=True)
class Decoded:
    text: str
    codec: str  # the encoding read
    refused: tuple[str, ...]  # the encodings declared that the bytes are not text in

    def note(self, url: str) -> str | None:
        """What the model is told when the page was not read in the encoding it declares."""
        if not self.refused:
            return None
        names = [web_name(codec) for codec in self.refused]
        if len(names) == 1:
            said = f"declares {names[0]}, but its bytes are not {names[0]} text"
        else:
            said = f"declares {' and '.join(names)}, but its bytes are text in neither"
        return f"[fetch_content: {url} {said} — read as {web_name(self.codec)}]"


def decode_page(data: bytes, content_type: str | None, url: str) -> Decoded:
    """The page as text, with the encoding read and the declared ones skipped; FetchError(1)
    when the bytes are not text in the encoding chosen."""
    codec, skip, refused = _choice(data, content_type, url)
    try:
        text = _decode_as(data[skip:], codec)
    except (LookupError, UnicodeError) as exc:  # a codec that fails even with replacement
        raise FetchError(CONVERSION, f"{url} cannot be decoded as {codec}: {exc}") from None
    if _garbage(text):
        reason = f"its bytes are not text in {codec}"
        if refused:
            reason += f", nor in {' or '.join(web_name(c) for c in refused)}, which it declares"
        raise FetchError(CONVERSION, f"{url} cannot be decoded: {reason}")
    return Decoded(text, codec, refused)


def decode(data: bytes, content_type: str | None, url: str) -> str:
    """The page as text, or FetchError(1) when the bytes are not text in the chosen encoding."""
    return decode_page(data, content_type, url).text
