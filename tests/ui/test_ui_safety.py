"""The inspector's safety: escaping, the Host check, the access token off loopback, error pages
without tracebacks, and hostile form values (Hypothesis) answered by clear refusals only."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspector_helpers import (
    BLOCK_HOSTILE,
    client_for,
    csrf_token,
    data_page,
    error_line,
    snapshot,
    textarea_value,
)

from memory_agent import MemoryManager
from memory_agent.errors import ConfigurationError
from memory_agent.ui import create_app
from memory_agent.ui.security import TOKEN_COOKIE

HOSTILE = '<script>alert("x")</script></textarea><b onmouseover=alert(1)>&amp;'


def _untouchable() -> MemoryManager:
    raise AssertionError("the request reached memory although it should have been refused first")


@pytest.mark.usefixtures("backend")
def test_every_value_is_escaped_wherever_it_is_shown(memory: MemoryManager) -> None:
    memory.create_block("notes/html", HOSTILE, description=HOSTILE, agent_id="ada")
    memory.archival_memory_insert(f"Passage {HOSTILE}", tags=[BLOCK_HOSTILE], agent_id="ada")
    memory.store_message("user", f"Message {HOSTILE}", agent_id="ada")
    memory.set_base_system_prompt(f"Base {HOSTILE}", agent_id="ada")
    client = client_for(memory)
    pages = [
        "/agents/ada",
        "/agents/ada/blocks/notes/html",
        "/agents/ada/journal",
        "/agents/ada/conversation",
        "/agents/ada/search",
        "/agents/ada/search?q=Passage&mode=keyword",
        "/agents/ada/prompt",
        f"/agents/ada/search?q={HOSTILE}&mode=keyword",
        "/agents/ada/blocks/%3Cscript%3E",
    ]
    for path in pages:
        text = client.get(path).text
        assert "<script" not in text and "<b " not in text, path
        assert text.count("</textarea>") == text.count("<textarea"), path
    block_page = client.get("/agents/ada/blocks/notes/html").text
    assert textarea_value(block_page) == HOSTILE  # shown as text, intact
    assert html.escape(HOSTILE, quote=False) in block_page or "&lt;script&gt;" in block_page
    search = client.get("/agents/ada/search").text
    assert "&lt;script&gt;" in search and html.escape(BLOCK_HOSTILE) in search
    assert "Message &lt;script&gt;" in client.get("/agents/ada/conversation").text


def test_a_request_naming_another_host_is_refused_before_anything_runs() -> None:
    for base in (
        "http://attacker.example:8765",
        "http://127.0.0.1:9999",
        "http://localhost.attacker.example:8765",
    ):
        response = client_for(_untouchable, base_url=base).get("/")
        assert response.status_code == 400, base
        assert data_page(response.text) == "error" and "DNS rebinding" in error_line(response.text)
    client = client_for(_untouchable)
    forged = client.post(
        "/agents/ada/blocks/persona",
        headers={"host": "evil.example"},
        data={"value": "x", "expected_version": "1"},
    )
    assert forged.status_code == 400
    for loopback_name in ("localhost:8765", "127.0.0.1:8765", "[::1]:8765"):
        assert client.get("/style.css", headers={"host": loopback_name}).status_code == 200, (
            loopback_name
        )


def test_off_loopback_an_access_token_is_required() -> None:
    with pytest.raises(ConfigurationError, match="access token"):
        create_app(_untouchable, bound_host="192.0.2.10:8765")
    token = "a-long-enough-token-0123456789"
    client = client_for(_untouchable, bound_host="192.0.2.10:8765", access_token=token)
    for path in ("/", "/agents/ada", "/style.css", "/?token=wrong-token", f"/?token={token}x"):
        response = client.get(path)
        assert response.status_code == 401 and "access token" in error_line(response.text), path
    refused = client.post("/agents/ada/blocks/persona", data={"value": "x"})
    assert refused.status_code == 401
    accepted = client.get(f"/style.css?token={token}&keep=1")
    assert accepted.status_code == 303 and accepted.headers["location"] == "/style.css?keep=1"
    assert (
        "HttpOnly" in accepted.headers["set-cookie"] and client.cookies.get(TOKEN_COOKIE) == token
    )
    assert client.get("/style.css").status_code == 200  # the cookie carries the token from now on
    stranger = client_for(_untouchable, bound_host="192.0.2.10:8765", access_token=token)
    stranger.cookies.set(TOKEN_COOKIE, "not-the-token")
    assert stranger.get("/style.css").status_code == 401


def test_a_loopback_server_needs_no_token_unless_given_one() -> None:
    assert client_for(_untouchable).get("/style.css").status_code == 200
    guarded = client_for(_untouchable, access_token="another-long-token-123456")
    assert guarded.get("/style.css").status_code == 401


def test_pages_are_sent_with_headers_that_forbid_script_framing_and_caching() -> None:
    response = client_for(_untouchable).get("/style.css")
    policy = response.headers["content-security-policy"]
    assert (
        "default-src 'none'" in policy
        and "script-src" not in policy
        and "frame-ancestors 'none'" in policy
    )
    assert (
        response.headers["x-frame-options"] == "DENY"
        and response.headers["cache-control"] == "no-store"
    )
    assert response.headers["referrer-policy"] == "no-referrer"


def test_an_unexpected_failure_is_a_page_with_one_line_never_a_traceback() -> None:
    def broken() -> MemoryManager:
        raise RuntimeError("/secret/path/memory.db exploded")

    client = client_for(
        broken, raise_server_exceptions=False
    )  # as a browser sees it; the server logs it
    response = client.get("/agents/ada")
    assert response.status_code == 500 and data_page(response.text) == "error"
    line = error_line(response.text)
    assert "RuntimeError" in line and "/secret/path" not in response.text
    assert "Traceback" not in response.text and 'File "' not in response.text
    wrong_method = client.put("/agents/ada")
    assert wrong_method.status_code == 405 and data_page(wrong_method.text) == "error"
    missing = client.get("/no/such/page")
    assert missing.status_code == 404 and "Traceback" not in missing.text


_form_text = st.text(max_size=60) | st.sampled_from(
    [
        "",
        "1",
        "-1",
        "999999999999999",
        "1e3",
        "0x1",
        " 1",
        "in_prompt\x00",
        "on_demand ",
        "\ud7ff",
        "<script>",
        "../../etc",
        "%00",
        "1" * 40,
    ]
)


@pytest.mark.usefixtures("backend")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    route=st.sampled_from(["", "/undo", "/placement"]),
    value=st.text(max_size=300) | st.sampled_from(["x" * 6000, "\x00", "a\r\nb", HOSTILE]),
    version=_form_text,
    placement=_form_text,
    csrf=st.sampled_from(["good", "missing", "wrong"]),
    label=st.sampled_from(
        ["persona", "rules", "projects/alpha.md", "missing", "../persona", "a//b", "%2e%2e"]
    ),
)
def test_hostile_form_values_get_clear_refusals_and_change_nothing(
    memory: MemoryManager,
    route: str,
    value: str,
    version: str,
    placement: str,
    csrf: str,
    label: str,
) -> None:
    client = client_for(memory)
    token = csrf_token(client)
    data: dict[str, Any] = {"value": value, "expected_version": version, "placement": placement}
    if csrf != "missing":
        data["csrf_token"] = token if csrf == "good" else token[::-1]
    before = snapshot(memory)
    response = client.post(f"/agents/ada/blocks/{label}{route}", data=data)
    if response.status_code == 303:
        assert csrf == "good"
        assert re.fullmatch(r"/agents/ada/blocks/[^?]+\?flash=\w+", response.headers["location"])
        return
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert data_page(response.text) == "error" and error_line(response.text)
    assert "Traceback" not in response.text
    assert snapshot(memory) == before


@pytest.mark.usefixtures("backend")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(passage=_form_text, good_token=st.booleans())
def test_hostile_passage_ids_are_404_or_403_and_change_nothing(
    memory: MemoryManager, passage: str, good_token: bool
) -> None:
    client = client_for(memory)
    token = csrf_token(client) if good_token else "x"
    before = snapshot(memory)
    response = client.post(
        f"/agents/ada/passages/{quote(passage or 'p', safe='')}/delete", data={"csrf_token": token}
    )
    assert 400 <= response.status_code < 500, response.text[:300]
    assert data_page(response.text) == "error" and error_line(response.text)
    assert snapshot(memory) == before


@pytest.mark.usefixtures("backend")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(["/agents/ada/search", "/agents/ada/journal", "/agents/ada/conversation"]),
    params=st.dictionaries(
        st.sampled_from(["q", "mode", "page", "limit", "author_kind", "token", "flash"]),
        _form_text,
        max_size=4,
    ),
)
def test_hostile_query_parameters_get_a_page_or_a_clear_refusal(
    memory: MemoryManager, path: str, params: dict[str, str]
) -> None:
    response = client_for(memory).get(path, params=params)
    assert response.status_code == 200 or 400 <= response.status_code < 500, response.text[:300]
    if response.status_code != 200:
        assert data_page(response.text) == "error" and error_line(response.text)
    assert "Traceback" not in response.text and "<script" not in response.text
