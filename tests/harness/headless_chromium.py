#!/usr/bin/python3
"""Debian's headless Chromium, driven by Selenium through chromedriver, for
the viewer's browser tests (tests/python/test_view_browser.py) and its
benchmark (bench/view_bench.py).

Packages: chromium, chromium-driver, python3-selenium (scripts/setup.sh).
Chromium starts with a fresh profile and the flags that keep it off the
network (without the background-networking flags it reaches for the network
at every start); the context manager quits it. A missing program is an
error, never a skip: the callers' tests must fail without it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator, List

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


@contextlib.contextmanager
def browser(timeout: float = 120.0, window: str = "1400,900",
            extra_flags: List[str] = ()) -> Iterator["object"]:
    """A Selenium Chrome driver on headless Chromium, with the browser
    console's log kept (driver.get_log("browser")) and `timeout` seconds for
    page loads and scripts; quit on exit, its profile removed."""
    from selenium import webdriver  # python3-selenium
    from selenium.webdriver.chrome.service import Service

    for program in (CHROMIUM, CHROMEDRIVER):
        if not os.access(program, os.X_OK):
            raise RuntimeError(f"{program} is missing: run scripts/setup.sh (chromium, "
                               "chromium-driver)")
    profile = tempfile.mkdtemp(prefix="gulpdb-chromium-")
    options = webdriver.ChromeOptions()
    for flag in FLAGS + ["--window-size=" + window] + list(extra_flags):
        options.add_argument(flag)
    options.add_argument("--user-data-dir=" + profile)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Under the sanitizer preset the test's interpreter runs with the ASan
    # and UBSan runtimes preloaded (tests/CMakeLists.txt); chromedriver and
    # Chromium are not built for them and exit at once if they inherit it.
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, env=env), options=options)
    try:
        driver.set_page_load_timeout(timeout)
        driver.set_script_timeout(timeout)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_ready(driver) -> None:
    """Waits for the viewer's first grid (window.gulpdbView.ready); raises what it failed with."""
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.gulpdbView.ready.then(() => done('ok'), (e) => done('failed: ' + e));")
    if result != "ok":
        raise RuntimeError(str(result))


def run_async(driver, body: str, *args: object) -> object:
    """Runs `body` (an async function body that may `await`; `args` are
    `args[0]`, ...) in the page and returns its value."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const args = Array.prototype.slice.call(arguments, 0, -1);"
        "(async () => {" + body + "})().then(done, (e) => done({error: String(e)}));", *args)
