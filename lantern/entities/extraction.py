"""Finding entities in text: regular expressions only, no model, no network, same text same
entities.

Each kind has a rule written for precision over recall (bench/entities measures it on the
Python standard library's sources and documentation): a miss costs a link, a wrong entity
pollutes every listing. The rules:

* `url`: `scheme://...` for http, https, ftp, ftps, ws, wss, file, ssh and git, cut before
  trailing punctuation and unbalanced closing brackets; templates (`{`, `%s`) are skipped.
* `email`: `local@domain.tld`, not inside a URL, not followed by `:` (an SSH remote).
* `path`: an absolute path of at least two parts (`/usr/lib`), one under `~/`, `./` or `../`,
  a Windows drive path (`C:\\Users\\ada`), or a relative path of at least two parts whose last
  one is a file name with a known extension (`lantern/api.py`); a version number such as the
  `1.1` of `HTTP/1.1` or `CGI/1.1` is not a file name.
* `mention`: `@handle` at the start of a line or after a space or an opening bracket, not an
  e-mail address, not `@scope/package`, not a decorator or annotation (alone on its line, or
  a common decorator's or documentation tag's name: `@property`, `@param`).
* `tag`: `#word` at the start of a line or after a space or an opening bracket, starting with
  a letter, not a C preprocessor word, not a hexadecimal colour, not followed by `(`, `;` or
  `=` (code); `# Heading` is no tag.
* `issue`: `#123`, `GH-123`, `owner/repo#123`, `bpo-123` and `KEY-123` keys of two to ten
  capital letters (standards such as UTF-8 and SHA-256 left out).
* `commit`: 7 to 12 or 40 lowercase hex digits, with both digits and letters, not after `0x`
  and not a number literal (`1e999`, `0b1010`).
* `wikilink`: `[[Page]]`, `[[Page|label]]`, `[[Page#Heading]]`: the page.
* `cve`: `CVE-2024-12345`.

In code (`source_file` sources), `@` and `#` and `[[` mean something else (decorators,
comments and preprocessor lines, nested indexing), so mentions, tags and wiki links are not
looked for there. What a URL contains is never also read as a path, mention, tag or issue.
`EXTRACTOR_VERSION` changes whenever a rule changes what it finds, so that `lantern entity
extract` reads the chunks that an older version read again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from lantern.entities.names import MAX_NAME_CHARS, NORMALISERS, EntityName

EXTRACTOR_VERSION = 2
"""1: the first rules. 2: versions (`HTTP/1.1`) are not paths; mentions at the start of a line;
no mentions in `@scope/package`, documentation tags or doctest decorators; no tags of code."""

CODE_KINDS = frozenset({"source_file"})
"""Source kinds whose text is code: no mentions, tags or wiki links are looked for there."""

_URL = re.compile(
    r"(?<![\w+.-])(?:https?|ftps?|wss?|file|ssh|git)://[^\s<>\"'`{}|\\^\[\]]+", re.IGNORECASE
)
_TRAILING = ".,;:!?*'\""
_PAIRS = {")": "(", "]": "[", "}": "{"}
_EMAIL = re.compile(
    r"(?<![\w.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-]|\.\w|:)"
)
_EXTENSIONS = (
    "py|pyi|pyx|pxd|c|h|cc|cpp|cxx|hpp|hh|rs|go|js|mjs|cjs|ts|tsx|jsx|java|kt|kts|rb|php|cs|"
    "swift|m|mm|sh|bash|zsh|fish|ps1|bat|cmd|md|markdown|rst|txt|json|jsonl|yaml|yml|toml|ini|"
    "cfg|conf|xml|html|htm|css|scss|sass|less|sql|db|sqlite|sqlite3|csv|tsv|log|lock|gz|zip|"
    "tar|tgz|bz2|xz|zst|whl|egg|png|jpg|jpeg|gif|svg|ico|webp|pdf|so|dll|dylib|exe|o|a|lib|"
    "wasm|ipynb|mk|cmake|gradle|proto|vue|svelte|lua|pl|pm|r|jl|dart|scala|ex|exs|erl|hrl|hs|"
    "ml|mli|el|vim|nix|tf|hcl|env|pem|crt|key|pub|asm|s|f|f90|ada|adb|d|zig|nim|v|sv|vhd|tex|"
    "bib|cls|sty|man|1|3|5|8|in|am|ac|spec|patch|diff|po|pot|mo|plist|desktop|service"
)
_PATH = re.compile(
    r"(?<![\w/.:~\\$%-])(?:"
    r"/(?:[\w.+@-]+/)+[\w.+@-]*[\w+@-]/?"  # /usr/lib/python3.11/os.py
    r"|~/(?:[\w.+@-]+/?)+"  # ~/notes/today.md
    r"|\.\.?/(?:[\w.+@-]+/?)+"  # ./configure, ../src/main.c
    r"|[A-Za-z]:\\(?:[\w.+@ -]+\\)*[\w.+@-]+"  # C:\Users\ada\notes.txt
    rf"|(?P<relative>(?:[\w.+@-]+/)+[\w+@-][\w.+@-]*\.(?:{_EXTENSIONS})(?![\w/]))"  # x/api.py
    r")"
)
_VERSION_NUMBER = re.compile(r"[\d.]+")
"""A last part of digits and dots: `1.1` in `HTTP/1.1` is a version, not a file named `1`
with the extension `.1` (a manual page section)."""
_MENTION = re.compile(
    r"(?<![\w@.+/&#`=:-])@([A-Za-z0-9](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_])){0,38})"
    r"(?![\w@-]|\.\w|[(/{]|:\S)"
)
"""`@name` not followed by a call, `/` (`@types/node`, a scoped package, or `@org/team`, whose
name is not the part before `/`), `{` (`@article{`) or a colon glued to more (`@scope:key=`)."""
_DECORATORS = frozenset(
    {
        "abstractmethod",
        "cache",
        "cached_property",
        "classmethod",
        "contextmanager",
        "dataclass",
        "final",
        "functools",
        "lru_cache",
        "overload",
        "override",
        "property",
        "pytest",
        "setter",
        "getter",
        "deleter",
        "singledispatch",
        "singledispatchmethod",
        "staticmethod",
        "total_ordering",
        "typing",
        "wraps",
        "asynccontextmanager",
        "unique",
        "runtime_checkable",
        "deprecated",
        "abc",
        "mock",
        "patch",
        "app",
        "click",
        "coroutine",
        "retry",
        "decorator",
        "interface",
        "implementer",
        "inject",
        "Override",
        "Deprecated",
        "FunctionalInterface",
        "SuppressWarnings",
        "Test",
        # Tags of documentation comments (JSDoc, Javadoc, Epydoc, Doxygen).
        "param",
        "params",
        "return",
        "returns",
        "rtype",
        "type",
        "throws",
        "raises",
        "see",
        "since",
    }
)
_TAG = re.compile(
    r"(?<![\w#&/@.:=\\`'\"-])#([^\W\d_][\w-]{0,48}[^\W_]|[^\W\d_])(?![\w-]|\(|;|\s*=(?!=))"
)
"""`#word` not followed by a call, `;` or `=`: `#count = 0;` and `#handler;` are private
fields of a JavaScript class."""
_PREPROCESSOR = frozenset(
    {
        "include",
        "define",
        "undef",
        "if",
        "ifdef",
        "ifndef",
        "elif",
        "else",
        "endif",
        "pragma",
        "error",
        "warning",
        "line",
        "import",
        "region",
        "endregion",
        "using",
        "cmakedefine",
        "cmakedefine01",
    }
)
_HEX_COLOUR = re.compile(r"[0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8}")
_ISSUE_HASH = re.compile(
    r"(?:\b(?P<repo>[A-Za-z0-9][\w.-]{0,38}/[\w.-]{1,100}))?#(?P<number>\d{1,9})\b"
)
_ISSUE_WORD = re.compile(r"\b(?:(?P<gh>[Gg][Hh])|(?P<bpo>bpo)|(?P<key>[A-Z]{2,10}))-\d{1,9}\b")
_NOT_BEFORE_ISSUE = frozenset("&#/.-") | frozenset("_")
_NOT_KEYS = frozenset(
    {
        "UTF",
        "UCS",
        "ISO",
        "IEC",
        "SHA",
        "MD",
        "RFC",
        "PEP",
        "CVE",
        "IEEE",
        "ANSI",
        "ECMA",
        "IPV",
        "TLS",
        "SSL",
        "AES",
        "DES",
        "RSA",
        "HMAC",
        "CRC",
        "CP",
        "KOI",
        "GB",
        "BIG",
        "EUC",
        "JIS",
        "WIN",
        "LATIN",
        "IBM",
        "MAC",
        "ARM",
        "COVID",
        "HTTP",
        "HTTPS",
        "TCP",
        "UDP",
        "IP",
        "OS",
        "API",
        "GPL",
        "LGPL",
        "AGPL",
        "BSD",
        "MIT",
        "CC",
        "PY",
        "HZ",
        "HP",
        "JOHAB",
        "MBCS",
        "TIS",
        "VISCII",
        "KZ",
        "PTCP",
        "ASCII",
        "BASE",
        "UNIX",
        "POSIX",
        "SQL",
        "XML",
        "HTML",
        "CSS",
        "JSON",
        "YAML",
        "IDNA",
        "ROT",
        "BZ",
        "LZMA",
        "ZIP",
        "GZIP",
        "TAR",
        "ARMV",
        "AMD",
        "SSE",
        "AVX",
        "DDR",
        "USB",
        "PCI",
        "ID",
        "UUID",
        "UTC",
        "GMT",
        "TZ",
        "NT",
        "VS",
        "MSVC",
        "GCC",
        "ICU",
        "MS",
        "DOS",
        "EBCDIC",
        "ECDSA",
        "ED",
        "ECDH",
        "DSA",
        "EC",
        "PBKDF",
        "SCRYPT",
        "BLAKE",
        "SHAKE",
        "ARGON",
        "CHACHA",
        "POLY",
        "CAST",
        "AE",
        "AEAD",
        "GCM",
        "CBC",
        "CTR",
        "XTS",
        "PKCS",
        "DER",
        "PEM",
        "ASN",
        "MP",
        "MPEG",
        "AAC",
        "FLAC",
        "WAV",
        "AIFF",
        "AU",
        "NIST",
        "FIPS",
        "CSV",
        "TSV",
        "RGB",
        "RGBA",
        "HSV",
        "YIQ",
        "HLS",
        "CMYK",
        "IPC",
        "RPC",
        "SMTP",
        "POP",
        "IMAP",
        "FTP",
        "NNTP",
        "LDAP",
        "DNS",
        "NTP",
        "SNMP",
        "SSH",
        "UI",
        "GUI",
        "CLI",
        "TK",
        "TCL",
        "GNU",
        "GLIBC",
        "LIBC",
        "ABI",
        "OK",
        "NO",
        "YES",
        "AM",
        "PM",
        "AD",
        "BC",
        "CE",
        "BCE",
        "Q",
        "FY",
        "KB",
        "MB",
        "TB",
        "PB",
        "KIB",
        "MIB",
        "GIB",
        "TIB",
        "KHZ",
        "MHZ",
        "GHZ",
        "DPI",
        "PPI",
    }
)
_COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
_NOT_BEFORE_COMMIT = frozenset("/#.$&%+=-")
_NUMBER = re.compile(r"\d+e\d+|0b[01]+")
_WIKILINK = re.compile(
    r"\[\[([^\[\]\n|#]{1,200})(?:#[^\[\]\n|]{0,200})?(?:\|[^\[\]\n]{0,200})?\]\]"
)
_CVE = re.compile(r"\bCVE-\d{4}-\d{4,7}\b", re.IGNORECASE)

Found = tuple[int, int, str, str]
"""`(start, end, kind, raw text)` of one match."""


def extract(text: str, source_kind: str | None = None) -> list[EntityName]:
    """The distinct entities `text` mentions, in the order of their first mention.

    `source_kind` is the kind of the text's source: in code, mentions, tags and wiki links
    are not looked for (see the module's note).
    """
    found: dict[str, EntityName] = {}
    for _start, _end, kind, raw in mentions(text, source_kind):
        normalise = NORMALISERS[kind]
        name = normalise(raw)
        if name is None or len(name) > MAX_NAME_CHARS:
            continue
        entity = EntityName(kind, name)
        found.setdefault(entity.id, entity)
    return list(found.values())


def mentions(text: str, source_kind: str | None = None) -> Iterator[Found]:
    """Every match in `text` with its offsets (what `extract` reads; the bench shows them)."""
    urls = list(_urls(text))
    yield from urls
    taken = [(start, end) for start, end, _kind, _raw in urls]

    def outside(start: int, end: int) -> bool:
        return not any(start < stop and begin < end for begin, stop in taken)

    code = source_kind in CODE_KINDS
    rules: list[tuple[str, Callable[[str], Iterator[tuple[int, int, str]]]]] = []
    if "@" in text:
        rules.append(("email", _emails))
    if "/" in text or "\\" in text:
        rules.append(("path", _paths))
    if "@" in text and not code:
        rules.append(("mention", _mentions))
    if "#" in text and not code:
        rules.append(("tag", _tags))
    rules.append(("issue", _issues))
    rules.append(("commit", _commits))
    if "[[" in text and not code:
        rules.append(("wikilink", _wikilinks))
    if "cve-" in text or "CVE-" in text:
        rules.append(("cve", _cves))
    for kind, rule in rules:
        for start, end, raw in rule(text):
            if outside(start, end):
                yield start, end, kind, raw
                if kind == "email":
                    taken.append((start, end))


def _urls(text: str) -> Iterator[Found]:
    if "://" not in text:
        return
    for match in _URL.finditer(text):
        raw = _trimmed(match.group())
        end = match.start() + len(raw)
        after = text[match.end() : match.end() + 1]
        if after in ("{", "[") or "%s" in raw or "%(" in raw or "%d" in raw:
            continue  # a template, not an address
        if raw.split("://", 1)[1].strip("/"):
            yield match.start(), end, "url", raw


def _trimmed(raw: str) -> str:
    """A URL without the punctuation and unbalanced closing brackets that end a sentence."""
    while raw:
        last = raw[-1]
        if last in _TRAILING or (last in _PAIRS and raw.count(last) > raw.count(_PAIRS[last])):
            raw = raw[:-1]
        else:
            break
    return raw


def _emails(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _EMAIL.finditer(text):
        yield match.start(), match.end(), match.group()


def _paths(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _PATH.finditer(text):
        raw = match.group().rstrip(".,:;")
        if match.group("relative") and _VERSION_NUMBER.fullmatch(raw.rsplit("/", 1)[1]):
            continue  # HTTP/1.1, CGI/1.1, TLS/1.3: a protocol and its version
        if raw.count("/") + raw.count("\\") >= 1 and len(raw) > 2:
            yield match.start(), match.start() + len(raw), raw


def _mentions(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _MENTION.finditer(text):
        handle = match.group(1)
        if handle in _DECORATORS or handle.isdigit():
            continue
        if _decorator_line(text, match.start(), match.end()):
            continue
        yield match.start(), match.end(), match.group()


def _decorator_line(text: str, start: int, end: int) -> bool:
    """Whether the `@name` at `start:end` is a decorator or an annotation: the first thing on
    its line (after a `>>>` or `...` prompt, in an interactive example) and the only one but
    for a comment, as `@cache` or `@Override` stand above what they decorate. A line that
    goes on with words (`@ada reviewed the plan`) is written to someone."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start].strip()
    if before not in ("", ">>>", "..."):
        return False  # after other words on its line
    line_end = text.find("\n", end)
    rest = text[end : line_end if line_end >= 0 else len(text)].strip()
    return not rest or rest.startswith(("#", "//"))


def _tags(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _TAG.finditer(text):
        word = match.group(1)
        if word.lower() in _PREPROCESSOR or _HEX_COLOUR.fullmatch(word):
            continue
        yield match.start(), match.end(), match.group()


def _issues(text: str) -> Iterator[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    if "#" in text:
        for match in _ISSUE_HASH.finditer(text):
            if _clear(text, match.start(), match.end(), _NOT_BEFORE_ISSUE):
                found.append((match.start(), match.end(), match.group()))
    if "-" in text:
        for match in _ISSUE_WORD.finditer(text):
            key = match.group("key")
            if key is not None and key in _NOT_KEYS:
                continue
            if _clear(text, match.start(), match.end(), _NOT_BEFORE_ISSUE):
                found.append((match.start(), match.end(), match.group()))
    yield from sorted(found)


def _clear(text: str, start: int, end: int, not_before: frozenset[str]) -> bool:
    """Whether a match stands alone: not glued to a word, a path or a version before it, nor
    to a word, a hyphen or a decimal part after it."""
    if start and (text[start - 1] in not_before or text[start - 1].isalnum()):
        return False
    after = text[end : end + 2]
    return not (
        after[:1] == "-"
        or after[:1].isalnum()
        or after[:1] == "_"
        or (after[:1] == "." and after[1:2].isdigit())
    )


def _commits(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _COMMIT.finditer(text):
        raw = match.group()
        if not (7 <= len(raw) <= 12 or len(raw) == 40):
            continue
        if raw.isdigit() or not any(ch.isdigit() for ch in raw):
            continue
        if not _clear(text, match.start(), match.end(), _NOT_BEFORE_COMMIT):
            continue
        if text[max(0, match.start() - 2) : match.start()].lower() == "0x":
            continue
        if _NUMBER.fullmatch(raw):
            continue  # 1e999, 077e010, 0b101010: numbers, not hashes
        yield match.start(), match.end(), raw


def _wikilinks(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _WIKILINK.finditer(text):
        page = match.group(1).strip()
        if not any(ch.isalpha() for ch in page) or any(ch in page for ch in "'\",=()"):
            continue
        yield match.start(), match.end(), match.group()


def _cves(text: str) -> Iterator[tuple[int, int, str]]:
    for match in _CVE.finditer(text):
        yield match.start(), match.end(), match.group()
