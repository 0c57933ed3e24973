"""Showing a value that may hold a secret: its shape, never the value.

Every message, repr, log record and `doctor` line that mentions a database URL, a `.env` line or
a setting's value goes through here, so there is one rule for what is shown. Why a rule of its
own: a database URL reaches the driver in many forms (`postgresql://user:pw@host/db`, a password
with an unencoded `#`, `?`, `/`, `@` or space, `?password=` in the query, libpq's keyword form
`host=... password=...` with quoted values, any other scheme), and a parser that reads the URL
the way a correct URL is read (`urllib.parse`) shows the password of every one that is not
correct. So the rules here assume the worst: everything between `://` and the last `@` is
credentials, only the values of keywords known to be harmless (host, port, database, user, ...)
are shown, and anything that does not parse is replaced by its length.
"""

from __future__ import annotations

import re

__all__ = [
    "MASK",
    "describe_value",
    "is_url",
    "redact_env_line",
    "redact_url",
    "scrub",
    "secret_parts",
]

MASK = "***"

_SCHEME = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*://")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")
_USER = re.compile(r"[^:@]*")
_DELIMITERS = re.compile(r"[\s#?/@:&=%'\"\\\[\]]+")
SHOWN_KEYS = frozenset(
    {
        "host",
        "hostaddr",
        "port",
        "dbname",
        "database",
        "user",
        "username",
        "sslmode",
        "connect_timeout",
        "application_name",
        "target_session_attrs",
        "gssencmode",
        "channel_binding",
        "load_balance_hosts",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "sslcompression",
        "sslrootcert",
        "sslcert",
        "sslcrl",
        "requiressl",
        "krbsrvname",
        "service",
        "client_encoding",
        "replication",
    }
)
"""Keywords whose values are shown; every other keyword's value (password, sslpassword, options,
a misspelt `pasword`, ...) is masked."""
NAMED_KEYS = SHOWN_KEYS | {
    "password",
    "sslpassword",
    "passfile",
    "options",
    "sslkey",
    "sslcertmode",
    "sslnegotiation",
    "require_auth",
    "gsslib",
    "min_protocol_version",
}
"""Keywords whose names are shown (their values masked); a word that looks like `key=value` but
names no keyword libpq knows may be half of a password, and is masked whole."""


def is_url(value: str) -> bool:
    """Whether `value` starts with a URL scheme (`postgresql://`, `mysql://`, ...)."""
    return bool(_SCHEME.match(value))


def describe_value(value: object) -> str:
    """A value's shape for an error about it: its length, never its characters (a secret put in
    the wrong variable must not be echoed by that variable's error). A number already parsed as
    one is shown: it is what the variable holds, not text that might be someone's secret."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    text = str(value)
    if not text.strip():
        return "an empty value"
    return f"a value of {len(text)} character{'s' if len(text) != 1 else ''}"


def redact_url(value: str) -> str:
    """A database URL or libpq keyword/value string with every secret replaced by `***`.

    URL form: the user is kept, whatever follows it before the last `@` is masked, the host,
    port and path are kept, and query parameters are shown only for harmless keys (from the
    first other key on, the rest of the query is masked: a secret value may hold `&` or `#`).
    Keyword form: values of `SHOWN_KEYS` are kept, all others masked, and a word that is not
    `key=value` (a password with a space, unquoted) is masked too. Anything else: its shape.
    """
    text = str(value)
    if is_url(text):
        shown = _redact_uri(text)
        for part in secret_parts(text):  # what the other reading of the URL holds secret
            shown = shown.replace(part, MASK)
        return shown
    if _KEY.match(text.strip()):
        return _redact_keywords(text)
    return f"<{describe_value(text)}>"


def _redact_uri(text: str) -> str:
    scheme_end = _SCHEME.match(text).end()  # type: ignore[union-attr]  # is_url() checked it
    scheme, rest = text[:scheme_end].strip(), text[scheme_end:]
    at = rest.rfind("@")
    if at >= 0:
        userinfo, rest = rest[:at], rest[at + 1 :]
        user = _USER.match(userinfo).group()  # type: ignore[union-attr]  # matches the empty string at least
        shown_user = user + (":" + MASK if user != userinfo else "") + "@"
    else:
        shown_user = ""
    cut = min(
        (index for index in (rest.find("?"), rest.find("#")) if index >= 0), default=len(rest)
    )
    location, query = rest[:cut], rest[cut:]
    if not shown_user:
        location = _mask_odd_port(location)
    return scheme + shown_user + location + _redact_query(query)


def _mask_odd_port(location: str) -> str:
    """`user:secret` with no `@` reads as host and port: a port that is not a number is masked."""
    host_end = location.find("/") if "/" in location else len(location)
    netloc = location[:host_end]
    if netloc.startswith("["):
        return location
    host, colon, port = netloc.partition(":")
    if colon and not all(part.isdigit() for part in port.split(",") if part):
        return host + ":" + MASK + location[host_end:]
    return location


def _redact_query(query: str) -> str:
    if not query:
        return ""
    if not query.startswith("?"):
        return "#" + MASK  # a fragment: never meaningful to a database, possibly half a password
    shown: list[str] = []
    for item in query[1:].split("&"):
        key, sep, _ = item.partition("=")
        if sep and key.strip().lower() in SHOWN_KEYS and "#" not in item:
            shown.append(item)
        else:
            shown.append(f"{key}={MASK}" if sep and key.strip().lower() in NAMED_KEYS else MASK)
            break
    return "?" + "&".join(shown)


def _keyword_tokens(text: str) -> list[tuple[str | None, str]]:
    """libpq's keyword/value pairs: (key, value), or (None, word) for a word that is not
    `key=value`."""
    tokens: list[tuple[str | None, str]] = []
    position = 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        match = _KEY.match(text, position)
        key = match.group(1) if match else None
        start = match.end() if match else position
        if start < len(text) and text[start] == "'":
            end = start + 1
            while end < len(text) and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, len(text))
        else:
            end = start
            while end < len(text) and not text[end].isspace():
                end += 1
        tokens.append((key, text[start:end]))
        position = max(end, position + 1)
    return tokens


def _redact_keywords(text: str) -> str:
    pieces: list[str] = []
    for key, value in _keyword_tokens(text):
        if key is not None and key.lower() in SHOWN_KEYS:
            pieces.append(f"{key}={value}")
        elif key is not None and key.lower() in NAMED_KEYS:
            pieces.append(f"{key}={MASK}")
        else:
            pieces.append(MASK)
    return " ".join(pieces)


def secret_parts(value: str) -> list[str]:
    """The pieces of a URL or keyword string that `redact_url` masks, longest first: what a
    driver's own error text must be cleaned of before it is shown (libpq quotes the URL it could
    not parse, or the word after which it expected `=`)."""
    text = str(value)
    parts: set[str] = set()
    if is_url(text):
        rest = text[_SCHEME.match(text).end() :]  # type: ignore[union-attr]  # is_url() checked it
        # Credentials end at the last '@' (a password may hold '/', '?' or '#'), unless that '@' is
        # in a query's value (`?password=a@b`): when a '?' and an '=' come before it, the URL is
        # read both ways and what either reading holds secret is masked.
        last, query = rest.rfind("@"), rest.find("?")
        parts.update(_uri_parts(rest, last))
        if 0 <= query < last and "=" in rest[query:last]:
            end = min((index for index in map(rest.find, "/?#") if index >= 0), default=len(rest))
            parts.update(_uri_parts(rest, rest.rfind("@", 0, end), fragment=False))
    elif _KEY.match(text.strip()):
        for keyword, token in _keyword_tokens(text):
            if keyword is None or keyword.lower() not in SHOWN_KEYS:
                parts.update({keyword or "", token, token.strip("'")} - set(NAMED_KEYS))
    else:
        parts.add(text)
    # A driver reads a malformed URL its own way (a password's `#` ends the URL for libpq, whose
    # "host" is then half of it): every piece between delimiters is a secret part too.
    pieces = {piece for part in parts for piece in (part, *_DELIMITERS.split(part))}
    return sorted((piece for piece in pieces if len(piece) >= 3), key=len, reverse=True)


def _uri_parts(rest: str, at: int, *, fragment: bool = True) -> set[str]:
    """The secret parts of a URL after its scheme, if its credentials end at position `at` (the
    fragment too, unless the reading puts a '#' of the password there)."""
    parts: set[str] = set()
    if at >= 0:
        userinfo = rest[:at]
        user = _USER.match(userinfo).group()  # type: ignore[union-attr]  # matches "" at least
        parts.add(userinfo[len(user) + 1 :])
        rest = rest[at + 1 :]
    cut = min(
        (index for index in (rest.find("?"), rest.find("#")) if index >= 0), default=len(rest)
    )
    if rest[cut : cut + 1] == "#" and not fragment:
        return parts
    items = rest[cut + 1 :].split("&") if rest[cut : cut + 1] == "?" else [rest[cut + 1 :]]
    for number, item in enumerate(items):
        name, sep, _ = item.partition("=")
        if not (sep and name.strip().lower() in SHOWN_KEYS and "#" not in item):
            # as in the redacted form: from here on, every name and value but libpq's own names
            parts.update(
                piece
                for other in items[number:]
                for piece in other.split("=")
                if piece.strip().lower() not in NAMED_KEYS
            )
            break
    port = rest[:cut].partition("/")[0].partition(":")[2]
    if at < 0 and not all(piece.isdigit() for piece in port.split(",") if piece):
        parts.add(port)
    return parts


def scrub(text: str, *sources: str) -> str:
    """`text` (a driver's error message, say) with every secret part of each source masked."""
    for source in sources:
        if source:
            text = text.replace(source, redact_url(source))
            for part in secret_parts(source):
                text = text.replace(part, MASK)
    return text


def redact_env_line(line: str) -> str:
    """A `.env` line for an error: the key and the value's shape (a line without `=` may be a
    secret pasted alone, so it is shown as its shape only)."""
    key, sep, value = line.strip().partition("=")
    if sep and key.strip().isidentifier():
        return f"{key.strip()}=<{describe_value(value.strip())}>"
    return f"<{describe_value(line)} without a KEY= in front>"
