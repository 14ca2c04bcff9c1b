"""The built site, served on loopback, in headless Debian chromium driven by chromedriver."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_serve_npu_tooling.docs.site import EDITIONS, built

from ray_serve_npu.fake_npu.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Off: everything that would reach the network or a Google service on its own.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
)


def _require_chromium() -> None:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        pytest.skip(
            f"browser tests need Debian's chromium: {', '.join(missing)} not installed "
            "(apt-get install -y chromium chromium-driver)"
        )


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """Both editions built as ``nox -s docs`` builds them, served by http.server."""
    _require_chromium()
    with contextlib.ExitStack() as editions:
        roots = [
            editions.enter_context(built(ROOT / "docs", builder="html", language=language))
            for language in EDITIONS
        ]
        # The run's builds (the root conftest's site cache) keep each translation below
        # the English edition, where the language switch links to it.
        site = roots[0]
        assert roots == [site / directory for directory in EDITIONS.values()], roots
        yield from _served(site)


def _served(site: Path) -> Iterator[str]:
    """``site`` served by http.server on a free loopback port, until the caller is done."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        cwd=site,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("http.server did not start") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="session")
def browser(site_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A fresh headless chromium profile that records the console."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where the tests leave a screenshot of each page they check."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def pages() -> list[str]:
    """The site's pages, by HTML file name."""
    return [f"{path.stem}.html" for path in sorted((ROOT / "docs").glob("*.md"))]


def pytest_report_header() -> str:
    found = shutil.which("chromium")
    return f"browser tests: chromium {'at ' + found if found else 'not installed'}"
