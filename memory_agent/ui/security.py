"""The inspector's guard: which requests reach a page at all.

Three checks run before any route, for every request (pages, the stylesheet, errors alike):

- the Host header must name the address the server is bound to, so a web page whose DNS name
  was rebound to 127.0.0.1 cannot read or write memory through the visitor's browser;
- off loopback an access token is required: accepted once as `?token=`, then kept in a cookie
  (compared in constant time), and the URL is cleaned of it by a redirect;
- under `--read-only` every write is refused, and no method but GET, HEAD and POST is served.

Writes also need the per-session CSRF token (`csrf_token`), checked where the form is read
(`app._write_form`): a session cookie is set on first contact, and the token is an HMAC of it
under a secret that lives only in this process, so another site can neither read nor forge it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlencode

from starlette.datastructures import URL, MutableHeaders
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigurationError

__all__ = ["SESSION_COOKIE", "TOKEN_COOKIE", "Guard", "GuardPolicy", "is_loopback", "new_token"]

SESSION_COOKIE = "memory_agent_ui_session"
TOKEN_COOKIE = "memory_agent_ui_token"
_WILDCARDS = {"0.0.0.0", "::", ""}
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}

ErrorPage = Callable[[Request, int, str], Awaitable[Response]]


def new_token() -> str:
    """A fresh random token (access tokens, session ids)."""
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    """Whether `host` only answers this machine (127.0.0.0/8, ::1, localhost)."""
    bare = host.strip("[]").lower()
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class GuardPolicy:
    """What the guard enforces, fixed when the app is made."""

    bound_host: str
    """`host:port` the server listens on (e.g. 127.0.0.1:8765)."""
    access_token: str | None
    read_only: bool
    secret: bytes

    @classmethod
    def make(cls, bound_host: str, access_token: str | None, read_only: bool) -> GuardPolicy:
        host, port = split_host_port(bound_host)
        if not is_loopback(host) and not access_token:
            raise ConfigurationError(
                f"The inspector is bound to {bound_host}, which other machines can reach: it needs "
                "an access "
                "token (memory-agent ui makes one and prints it; give one with --token)."
            )
        if access_token is not None and len(access_token) < 16:
            raise ConfigurationError(
                "An access token must be at least 16 characters long; leave --token out "
                "and one is made for you."
            )
        return cls(
            bound_host=f"{host}:{port}",
            access_token=access_token,
            read_only=read_only,
            secret=secrets.token_bytes(32),
        )

    def host_allowed(self, header: str) -> bool:
        """Whether a request's Host header names the bound address (any loopback name for a
        loopback bind; any name on the port for a wildcard bind, where the token protects)."""
        host, port = split_host_port(self.bound_host)
        try:
            asked_host, asked_port = split_host_port(header)
        except ConfigurationError:
            return False
        if asked_port != port:
            return False
        if host.strip("[]") in _WILDCARDS:
            return True
        if is_loopback(host):
            return asked_host.lower() in _LOOPBACK_NAMES or asked_host.lower() == host.lower()
        return asked_host.lower() == host.lower()

    def csrf_token(self, session: str) -> str:
        """The session's CSRF token: HMAC of the session id under this process's secret."""
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    def csrf_valid(self, session: str | None, offered: object) -> bool:
        if not session or not isinstance(offered, str) or not offered.isascii():
            return False
        return hmac.compare_digest(self.csrf_token(session).encode(), offered.encode())

    def token_valid(self, offered: str | None) -> bool:
        if self.access_token is None:
            return True
        if not offered or not offered.isascii():
            return False
        return hmac.compare_digest(self.access_token.encode(), offered.encode())


def split_host_port(text: str) -> tuple[str, int]:
    """`host:port` (IPv6 in brackets) into its parts; a missing port is 80, as HTTP's default."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text.partition("]")
        host += "]"
        port_text = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ConfigurationError(f"Not a host:port: {text[:80]!r}")
    elif text.count(":") > 1:  # a bare IPv6 address
        host, port_text = f"[{text}]", ""
    else:
        host, _, port_text = text.partition(":")
    if port_text and not port_text.isdigit():
        raise ConfigurationError(f"Not a host:port: {text[:80]!r}")
    return host, int(port_text) if port_text else 80


class Guard:
    """ASGI middleware applying a `GuardPolicy` before any route runs."""

    def __init__(self, app: ASGIApp, policy: GuardPolicy, error_page: ErrorPage) -> None:
        self.app = app
        self.policy = policy
        self.error_page = error_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        refusal = self._refusal(request)
        if refusal is not None:
            status, message = refusal
            response = await self.error_page(request, status, message)
            _harden(response.headers)
            await response(scope, receive, send)
            return
        offered = request.query_params.get("token")
        if self.policy.access_token is not None and offered is not None:
            await self._accept_token(request)(scope, receive, send)
            return
        offered_session = request.cookies.get(SESSION_COOKIE)
        fresh = offered_session is None or not _is_session_id(offered_session)
        session = new_token() if fresh or offered_session is None else offered_session
        scope.setdefault("state", {})["session"] = session
        scope["state"]["csrf_token"] = self.policy.csrf_token(session)

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                _harden(headers)
                if fresh:
                    headers.append("set-cookie", _cookie(SESSION_COOKIE, session))
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    def _refusal(self, request: Request) -> tuple[int, str] | None:
        policy = self.policy
        if not policy.host_allowed(request.headers.get("host", "")):
            return 400, (
                f"This inspector answers only at http://{policy.bound_host}/; the request named "
                "another "
                "host, so it was refused (this guards against DNS rebinding). Open the address "
                "memory-agent ui printed."
            )
        if request.method not in ("GET", "HEAD", "POST"):
            return (
                405,
                f"The inspector does not serve {request.method[:16]} requests; nothing was "
                "changed.",
            )
        offered = request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE)
        if not policy.token_valid(offered):
            return 401, (
                "This inspector needs its access token: open the full address with ?token=... that "
                "memory-agent ui printed."
            )
        if policy.read_only and request.method == "POST":
            return 403, "The inspector runs read-only (--read-only): it changes nothing."
        return None

    def _accept_token(self, request: Request) -> Response:
        """The token arrived in the URL and was valid: keep it in a cookie and drop it from the
        URL."""
        kept = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
        target = URL(path=request.url.path, query=urlencode(kept))
        response = RedirectResponse(str(target), status_code=303)
        response.headers.append("set-cookie", _cookie(TOKEN_COOKIE, self.policy.access_token or ""))
        _harden(response.headers)
        return response


def _is_session_id(text: str) -> bool:
    """What `new_token` makes: a short URL-safe string (anything else is replaced, never echoed)."""
    return 16 <= len(text) <= 64 and all(
        char.isascii() and (char.isalnum() or char in "-_") for char in text
    )


def _cookie(name: str, value: str) -> str:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Lax"


def _harden(headers: MutableHeaders) -> None:
    """No script, nothing from elsewhere, no framing, no caching of memory, no Referer carrying a
    token."""
    headers["content-security-policy"] = (
        "default-src 'none'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    headers["x-content-type-options"] = "nosniff"
    headers["x-frame-options"] = "DENY"
    headers["referrer-policy"] = "no-referrer"
    headers["cache-control"] = "no-store"
