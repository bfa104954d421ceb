"""The web viewer in a real headless browser: Debian's chromium, driven by selenium.

The test builds the demo conversation (tool calls, a branch, a fork, state, usage), adds
versioned memory blocks and a compaction, serves it with a real uvicorn and an API key,
and checks the key elements in the DOM and a screenshot. With
``SESSIONARY_UPDATE_SCREENSHOT=1`` it also writes the screenshot the README shows to
``docs/viewer.png``.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessionary import SessionConfig, SessionManager
from sessionary._demo import build_demo
from sessionary.server import create_app
from sessionary.server.commands import create_key

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SIZE = (1400, 1000)
DOCS = Path(__file__).resolve().parents[2] / "docs"
WAIT = 60  # a bound on a hang only


@pytest.fixture
def browser(unavailable: Callable[[str], None]) -> Iterator[Any]:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if shutil.which(path) is None]
    if missing:
        unavailable(f"no {' and '.join(missing)}: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="sessionary-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={SIZE[0]},{SIZE[1]}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _build(url: str) -> str:
    config = SessionConfig().with_block("memory", kind="writable", level="user")
    with SessionManager(url, tenant="acme", user="ada", config=config) as mgr:
        demo = build_demo(mgr)
        chat = mgr.session(demo.main.id)
        chat.replace_context_block("memory", "Works on ~/src/shop.", author="user")
        chat.append_context_block("memory", "Prefers Decimal money maths.", author="model")
        chat.compact(protect_head=0, tail_tokens=200)
        return demo.main.id


@pytest.fixture
def served(server_store_url: str) -> Iterator[tuple[str, str, str]]:
    import uvicorn

    session_id = _build(server_store_url)
    _, token = create_key(server_store_url, "acme", "ada", "viewer test")
    config = uvicorn.Config(
        create_app(server_store_url),
        host="127.0.0.1",
        port=0,
        log_level="warning",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", token, session_id
    server.should_exit = True
    thread.join(WAIT)


def _png(data: bytes) -> tuple[int, int, int]:
    """A PNG's width, height, and how many distinct byte values its pixels hold."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


def test_viewer_shows_tree_memory_state_and_search(served: Any, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    base, token, session_id = served
    wait = WebDriverWait(browser, WAIT)
    browser.get(base + "/")
    wait.until(ec.visibility_of_element_located((By.ID, "key-form")))
    browser.find_element(By.ID, "key-input").send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "#key-form button").click()
    item = f'.session-item[data-id="{session_id}"]'
    wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, item))).click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".message.head")))
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".block .block-history")))

    find = browser.find_elements
    assert len(find(By.CSS_SELECTOR, ".session-item")) == 2
    assert "messages" in browser.find_element(By.CSS_SELECTOR, item + " .session-usage").text
    assert len(find(By.CSS_SELECTOR, ".message.head")) == 1
    assert find(By.CSS_SELECTOR, ".branches .branch") and find(By.CSS_SELECTOR, ".branch-badge")
    assert find(By.CSS_SELECTOR, ".message.off-head")
    calls = find(By.CSS_SELECTOR, "details.tool-call")
    assert calls and not any(call.get_attribute("open") for call in calls)  # folded
    assert find(By.CSS_SELECTOR, "details.tool-result")
    assert find(By.CSS_SELECTOR, "#tree .overlay") and find(By.CSS_SELECTOR, ".message.compacted")
    summary = browser.find_element(By.CSS_SELECTOR, "#tree .overlay-summary")
    assert "Decimal" in summary.get_attribute("textContent")
    block = browser.find_element(By.CSS_SELECTOR, '.block[data-label="memory"]')
    assert "Prefers Decimal" in block.find_element(By.CSS_SELECTOR, ".block-content").text
    assert block.find_element(By.TAG_NAME, "summary").text == "2 versions"
    assert '"files_touched"' in browser.find_element(By.ID, "state").text

    shot = browser.get_screenshot_as_png()
    width, height, variety = _png(shot)
    viewport = browser.execute_script(
        "return [innerWidth * devicePixelRatio, innerHeight * devicePixelRatio]"
    )
    assert [width, height] == viewport and width == SIZE[0] and height > SIZE[1] // 2
    assert variety > 50  # not blank: text, badges and colours
    if os.environ.get("SESSIONARY_UPDATE_SCREENSHOT"):
        DOCS.mkdir(exist_ok=True)
        (DOCS / "viewer.png").write_bytes(shot)

    browser.find_element(By.ID, "search-input").send_keys("Decimal")
    browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".hit mark")))
    marks = find(By.CSS_SELECTOR, ".hit mark")
    assert marks and all(mark.text.lower() == "decimal" for mark in marks)
    assert not any("****" in hit.text for hit in find(By.CSS_SELECTOR, ".hit"))


def test_api_docs_render_without_network(served: Any, browser: Any) -> None:
    """Swagger UI draws every route from files the app serves (no CDN is reachable here)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    base = served[0]
    browser.get(base + "/docs")
    WebDriverWait(browser, WAIT).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, ".opblock"))
    )
    paths = {el.text for el in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert "/v1/sessions/{session_id}/messages" in {p.replace("\u200b", "") for p in paths}
