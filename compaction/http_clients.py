"""HTTP clients for the Anthropic API that share one TLS context per process.

Why: the HTTP library under the Anthropic SDK builds a TLS context for every client it makes,
loading the CA certificates (about 25 ms of CPU), and the library makes a client for each
summariser and reranker: every agent, compaction run and model consolidation. The context is
built once, when the first client is made, by that same library's public `create_ssl_context`
(so with its own choice of certificates and environment variables, SSL_CERT_FILE among them);
one TLS context may serve any number of clients, connections and threads.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

__all__ = ["async_http_client", "http_client", "shared_ssl_context"]


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process's TLS context for the Anthropic API, made on first use."""
    import anthropic

    # httpx, or the fork of it that newer SDKs build on (httpx2): whichever the SDK's own
    # default client class derives from.
    package = anthropic.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0]
    library = importlib.import_module(package)
    context: ssl.SSLContext = library.create_ssl_context()
    return context


def async_http_client() -> Any:
    """A new client with the Anthropic SDK's defaults (timeouts, limits) and the shared context."""
    import anthropic

    return anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context())


def http_client() -> Any:
    """The blocking counterpart of `async_http_client`."""
    import anthropic

    return anthropic.DefaultHttpxClient(verify=shared_ssl_context())
