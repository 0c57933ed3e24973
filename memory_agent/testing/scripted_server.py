"""A scripted Anthropic Messages API server on 127.0.0.1, for testing agents offline.

The real ``claude-agent-sdk`` runs its bundled Claude Code CLI, which honours
``ANTHROPIC_BASE_URL``; pointing it (or an ``anthropic`` client) at this server exercises the
whole stack (SDK, CLI, in-process MCP tools) with replies the test chose in advance, and records
every request so the test can assert on exactly what the model was sent.

Invariants:

* Scripted replies are served first in, first out, and only to *turn* requests: a
  ``POST /v1/messages`` that the server does not classify as auxiliary. Requests the CLI makes
  for its own purposes (see :func:`is_auxiliary_request`: model probes, its own compaction)
  get a neutral default reply and never consume the script, so a test's script does not depend
  on the CLI's housekeeping.
* A reply enqueued with ``model="haiku"`` is served only to requests whose model contains
  ``haiku`` (case-insensitive); such a filtered reply takes precedence over unfiltered ones for
  matching requests, and unfiltered replies serve any model.
* When nothing is scripted for a request, it gets a default text reply, so a stray request
  never hangs a test.
* Every request is recorded, including token counts and unknown paths (answered 404).
* Input is billed as the API bills it (see :mod:`.prompt_cache`): the reply's ``usage`` splits
  the request into cache reads, cache writes and uncached input, and the record keeps the split
  (``RecordedRequest.cache_usage``). A reply whose ``input_tokens`` is scripted reports the
  scripted figures instead.

The server uses only the standard library and imports nothing else from ``memory_agent``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import wire
from .prompt_cache import PromptCache, TooManyBreakpointsError
from .recorded import RecordedRequest, RequestKind
from .responses import ScriptedError, ScriptedMessage, ScriptedResponse, ToolUseBlock, text_response

__all__ = [
    "COMPACTION_MARKERS",
    "DUMMY_API_KEY",
    "ScriptedMessagesServer",
    "is_auxiliary_request",
    "is_compaction_request",
]

#: The API key put in :meth:`ScriptedMessagesServer.env`; the server accepts any key.
DUMMY_API_KEY = "sk-ant-api03-scripted-test-key"

_MESSAGES_PATH = "/v1/messages"
_COUNT_TOKENS_PATH = "/v1/messages/count_tokens"


#: Text of the last user message of the CLI's own conversation-compaction request. The CLI
#: compacts by itself near the context limit (or on ``/compact``), with the turn's model, system
#: prompt and tools, so only this instruction tells it apart from a turn.
COMPACTION_MARKERS: tuple[str, ...] = (
    "Your task is to create a detailed summary of the conversation so far",
    "an <analysis> block followed by a <summary> block",
)


def is_compaction_request(request: RecordedRequest) -> bool:
    """Whether a messages request is the CLI asking the model to summarise the conversation."""
    text = request.last_user_text
    return any(marker in text for marker in COMPACTION_MARKERS)


def is_auxiliary_request(request: RecordedRequest) -> bool:
    """Whether a ``POST /v1/messages`` is the CLI's own housekeeping rather than an agent turn.

    Two kinds are known (Claude Code CLI 2.1.329): one-token probes (``max_tokens`` of 1, as in
    the model validation after ``ClaudeSDKClient.set_model``, which asks the new model "Hi"
    without tools) and the CLI's own compaction of the conversation (see
    :data:`COMPACTION_MARKERS`). A caller's own ``max_tokens=1`` request is therefore auxiliary
    too; pass ``is_auxiliary`` to the server to decide otherwise.
    """
    max_tokens = request.body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens <= 1:
        return True
    return is_compaction_request(request)


@dataclass(frozen=True)
class _Entry:
    response: ScriptedResponse
    model: str | None


class ScriptedMessagesServer:
    """A Messages API server that answers from a script and records what it was sent.

    Use as a context manager (or call :meth:`start` and :meth:`stop`)::

        with ScriptedMessagesServer() as server:
            server.enqueue(text_response("hello"))
            options = ClaudeAgentOptions(env=server.env())

    Args:
        default_text: Text of the reply to a turn request when the script is empty.
        auxiliary_text: Text of the reply to auxiliary requests other than compaction.
        compaction_summary: Summary given when the CLI compacts by itself; it is wrapped in the
            ``<analysis>``/``<summary>`` tags the CLI expects, so it accepts it first time.
        is_auxiliary: Decides which ``POST /v1/messages`` requests are auxiliary (never served
            from the script); defaults to :func:`is_auxiliary_request`. Pass
            ``lambda request: False`` to script every request.
        host: Interface to bind; keep the loopback default.
        port: Port to bind; 0 picks a free one.
        count_tokens: Tokens of a text, for every usage figure; defaults to the wire estimate
            of four characters a token. Pass the project's tiktoken counter's ``count_text`` to
            bill with the same tokenizer the agent budgets with.
        clock: Monotonic seconds for the prompt cache's TTL; tests inject one to let time pass.
        responder: Answers a turn request that nothing in the script is for, from the request
            itself (None: the default reply). For runs too long to script reply by reply, such
            as a benchmark's stand-in for a model that must answer what it was asked, or to
            hold a reply until a test lets it go. It runs in the request's handler thread.
    """

    def __init__(
        self,
        *,
        default_text: str = "OK",
        auxiliary_text: str = "OK",
        compaction_summary: str = "Scripted summary of the conversation so far.",
        is_auxiliary: Callable[[RecordedRequest], bool] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        count_tokens: Callable[[str], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        responder: Callable[[RecordedRequest], ScriptedResponse | None] | None = None,
    ) -> None:
        self.responder = responder
        """See the `responder` argument; may be set while the server runs."""
        self.default_text = default_text
        self.auxiliary_text = auxiliary_text
        self.compaction_summary = compaction_summary
        self._is_auxiliary = is_auxiliary or is_auxiliary_request
        self._host = host
        self._requested_port = port
        self._lock = threading.Condition()
        self._script: list[_Entry] = []
        self._requests: list[RecordedRequest] = []
        self._recorded = 0
        self._ids = itertools.count(1)
        self.count_tokens: Callable[[str], int] = count_tokens or wire.estimate_tokens
        self.prompt_cache = PromptCache(self.count_tokens, clock=clock)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedMessagesServer:
        """Bind and serve in a background thread; returns ``self``."""
        if self._httpd is not None:
            raise RuntimeError(
                "ScriptedMessagesServer is already running; call stop() before start()."
            )
        httpd = _ThreadingServer((self._host, self._requested_port), _make_handler(self))
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # so that stop() returns promptly
            name="scripted-messages-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; the recorded requests stay readable."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedMessagesServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError(
                "ScriptedMessagesServer is not running; call start() or use it as a context "
                "manager."
            )
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BASE_URL`` or ``AsyncAnthropic(base_url=...)``."""
        return f"http://{self._host}:{self.port}"

    def env(self, **overrides: str) -> dict[str, str]:
        """Environment for ``ClaudeAgentOptions(env=...)``: point the CLI here and keep it quiet.

        Sets the base URL and a dummy key, blanks inherited credentials and cloud-provider
        switches that would send the CLI elsewhere, and turns off non-essential traffic,
        telemetry, error reporting and the auto-updater. ``overrides`` are applied last.

        It also blanks the machine's extra certificate settings (``NODE_EXTRA_CA_CERTS``,
        ``SSL_CERT_FILE``, ``SSL_CERT_DIR``): this server speaks plain HTTP, so no certificate is
        ever checked, and a CLI given them reads and parses every certificate file at each start
        (about 35 ms of CPU per start on 2 cores, 7 % of a start and one-turn run).
        """
        env = {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": DUMMY_API_KEY,
            "ANTHROPIC_AUTH_TOKEN": "",
            "CLAUDE_CODE_USE_BEDROCK": "",
            "CLAUDE_CODE_USE_VERTEX": "",
            "CLAUDE_CODE_USE_FOUNDRY": "",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "NODE_EXTRA_CA_CERTS": "",
            "SSL_CERT_FILE": "",
            "SSL_CERT_DIR": "",
        }
        env.update(overrides)
        return env

    # -- script ----------------------------------------------------------------------------

    def enqueue(self, *responses: ScriptedResponse, model: str | None = None) -> None:
        """Append replies to the script (FIFO).

        Args:
            responses: Replies built with :func:`text_response`, :func:`tool_use_response`,
                :func:`message_response` or :func:`error_response`.
            model: When given, the replies go only to requests whose model contains this
                text (case-insensitive), e.g. ``"haiku"`` for a summariser.
        """
        for response in responses:
            if not isinstance(response, (ScriptedMessage, ScriptedError)):
                raise TypeError(
                    f"enqueue() takes scripted replies (text_response(), error_response(), ...), "
                    f"not {type(response).__name__}."
                )
        with self._lock:
            self._script.extend(_Entry(r, model) for r in responses)

    def pending(self, model: str | None = None) -> list[ScriptedResponse]:
        """Replies not served yet, in script order.

        With ``model``, only those a turn request for that model could take, in the order it
        would take them (replies filtered for that model first, then unfiltered ones).
        """
        with self._lock:
            if model is None:
                return [e.response for e in self._script]
            filtered = [
                e.response for e in self._script if e.model is not None and _matches(e.model, model)
            ]
            return filtered + [e.response for e in self._script if e.model is None]

    def clear(self) -> None:
        """Forget the script and the recorded requests."""
        with self._lock:
            self._script.clear()
            self._requests.clear()

    def take_requests(self) -> list[RecordedRequest]:
        """Return the requests recorded so far and forget them (the script stays).

        A long run (a soak of a thousand turns of 500 kB requests) would otherwise keep every
        request body in memory; take them turn by turn and keep only what you measure.
        """
        with self._lock:
            taken = [r for r in self._requests if r.completed]
            self._requests = [r for r in self._requests if not r.completed]
            return taken

    def _take(self, model: str) -> ScriptedResponse | None:
        """Pop the reply for a turn request: a filtered match first, else the first unfiltered."""
        with self._lock:
            for position, entry in enumerate(self._script):
                if entry.model is not None and _matches(entry.model, model):
                    return self._script.pop(position).response
            for position, entry in enumerate(self._script):
                if entry.model is None:
                    return self._script.pop(position).response
            return None

    # -- recording -------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def message_requests(self, model: str | None = None) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests (turns and auxiliary), optionally by model text."""
        return [
            r
            for r in self.requests
            if r.kind in ("turn", "auxiliary") and (model is None or _matches(model, r.model))
        ]

    def turn_requests(self, model: str | None = None) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests that were answered from the script or the default."""
        return [r for r in self.message_requests(model) if r.kind == "turn"]

    def wait_for_requests(
        self, count: int, *, kind: RequestKind | None = None, timeout: float = 10.0
    ) -> list[RecordedRequest]:
        """Block until ``count`` requests (of ``kind``, if given) have been answered."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                done = [
                    r for r in self._requests if r.completed and (kind is None or r.kind == kind)
                ]
                if len(done) >= count:
                    return done
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"waited {timeout}s for {count} requests, got {len(done)}: {done!r}"
                    )
                self._lock.wait(remaining)

    def _record(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> RecordedRequest:
        with self._lock:
            request = RecordedRequest.parse(self._recorded, method, target, headers, raw)
            self._recorded += 1
            self._requests.append(request)
        return request

    def _set_status(self, request: RecordedRequest, status: int) -> None:
        # Set before the reply is written: a client may inspect the record as soon as it reads.
        with self._lock:
            request.status = status

    def _finish(self, request: RecordedRequest) -> None:
        with self._lock:
            request.completed = True
            self._lock.notify_all()

    # -- answering -------------------------------------------------------------------------

    def _classify(self, request: RecordedRequest) -> None:
        if request.method != "POST":
            request.kind = "other"
        elif request.path == _COUNT_TOKENS_PATH:
            request.kind = "count_tokens"
        elif request.path == _MESSAGES_PATH:
            request.kind = "auxiliary" if self._is_auxiliary(request) else "turn"
        else:
            request.kind = "other"

    def _choose(self, request: RecordedRequest) -> ScriptedResponse:
        """The reply for a messages request; records whether it came from the script."""
        if request.kind == "auxiliary":
            request.served_default = True
            reply: ScriptedResponse = text_response(self._auxiliary_text(request))
        else:
            scripted = self._take(request.model)
            responder = self.responder
            if scripted is None and responder is not None:
                scripted = responder(request)
            request.served_default = scripted is None
            reply = scripted if scripted is not None else text_response(self.default_text)
        request.response = reply
        return reply

    def _usage(self, request: RecordedRequest, reply: ScriptedMessage) -> dict[str, int]:
        """The reply's ``usage``: scripted figures if given, else billed by the prompt cache."""
        if reply.input_tokens is not None:
            return wire.usage_of(reply, request.body)
        billed = self.prompt_cache.account(request.model, request.body)
        with self._lock:
            request.cache_usage = billed
        output = (
            reply.output_tokens
            if reply.output_tokens is not None
            else wire.estimate_output_tokens(reply)
        )
        return {**billed.as_usage(), "output_tokens": output}

    def _auxiliary_text(self, request: RecordedRequest) -> str:
        if is_compaction_request(request):
            summary = self.compaction_summary
            return f"<analysis>Scripted.</analysis>\n\n<summary>\n{summary}\n</summary>"
        return self.auxiliary_text

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_scripted_{next(self._ids):06d}"

    def _tool_ids(self, reply: ScriptedMessage) -> list[str]:
        return [
            (b.id or self._next_id("toolu")) if isinstance(b, ToolUseBlock) else ""
            for b in reply.content
        ]


def _matches(filter_text: str | None, model: str) -> bool:
    return filter_text is None or filter_text.lower() in model.lower()


class _ThreadingServer(ThreadingHTTPServer):
    """One daemon thread per connection, and a listen backlog deep enough for bursts.

    The stdlib default backlog of 5 resets connections when a client opens many at once.
    """

    daemon_threads = True
    request_queue_size = 128


def _make_handler(server: ScriptedMessagesServer) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``server`` (http.server instantiates one per request)."""

    class Handler(_Handler):
        scripted = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """Speaks just enough HTTP/1.1 for the Messages API: keep-alive, JSON and chunked SSE."""

    protocol_version = "HTTP/1.1"
    server_version = "ScriptedMessagesServer/1"
    # Why: a reply is written in several small sends (headers, body, one chunk per SSE event).
    # With Nagle's algorithm on, each send after the first waits for the client's ACK, which
    # Linux delays by 40 ms: 40 ms of idle time per request, seconds per scripted run.
    disable_nagle_algorithm = True
    timeout = 60  # an idle keep-alive connection frees its thread after this
    scripted: ScriptedMessagesServer
    _current: RecordedRequest

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request log lines http.server prints to stderr."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        server = self.scripted
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = server._record(self.command, self.path, headers, self._read_body())
        server._classify(request)
        self._current = request
        try:
            if request.kind == "count_tokens":
                self._send_json(200, {"input_tokens": wire.estimate_input_tokens(request.body)})
            elif request.kind in ("turn", "auxiliary"):
                self._answer(request, server._choose(request))
            else:
                self._send_json(404, wire.not_found_body(request.path))
        except (BrokenPipeError, ConnectionResetError):
            # The client went away mid-reply (an interrupted turn): nothing to report.
            self.close_connection = True
        finally:
            server._finish(request)

    def _answer(self, request: RecordedRequest, reply: ScriptedResponse) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        server = self.scripted
        if isinstance(reply, ScriptedError):
            if reply.in_stream and request.stream:
                usage = {
                    "input_tokens": wire.estimate_input_tokens(request.body),
                    "output_tokens": 0,
                }
                start = wire.message_start_event(server._next_id("msg"), request.model, usage)
                self._send_events(200, [start, wire.error_event(reply)])
            else:
                self._send_json(reply.status, wire.error_body(reply), _error_headers(reply))
            return
        try:
            usage = server._usage(request, reply)
        except TooManyBreakpointsError as error:
            self._send_json(400, wire.error_body(ScriptedError(400, message=str(error))))
            return
        shape: dict[str, Any] = {
            "message_id": server._next_id("msg"),
            "model": request.model,
            "tool_ids": server._tool_ids(reply),
            "usage": usage,
        }
        if request.stream:
            self._send_events(200, wire.message_events(reply, **shape))
        else:
            self._send_json(200, wire.message_body(reply, **shape))

    def _send_json(
        self, status: int, body: dict[str, Any], extra: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.scripted._set_status(self._current, status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", self.scripted._next_id("req"))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _send_events(self, status: int, events: Iterable[bytes]) -> None:
        """Write SSE events with chunked transfer encoding, one flushed chunk per event."""
        self.scripted._set_status(self._current, status)
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", self.scripted._next_id("req"))
        self.end_headers()
        for event in events:
            self.wfile.write(f"{len(event):X}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _error_headers(error: ScriptedError) -> dict[str, str]:
    headers: dict[str, str] = {}
    if error.retry_after is not None:
        headers["retry-after"] = f"{error.retry_after:g}"
    if error.should_retry is not None:
        headers["x-should-retry"] = "true" if error.should_retry else "false"
    return headers
