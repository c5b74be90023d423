"""The viewer's page in a real browser: Debian's headless Chromium driven by
Selenium (python3-selenium, chromium-driver). The page loads, the grid shows
the videos it should with their ids, a thumbnail shows the pixels of its
frame, a filter and a split change the grid, a video plays its frames in
order, a damaged frame shows as damaged, the charts come after the first
grid, and the console has no JavaScript error. Screenshots go to the build
folder (view_support.screenshot_dir).

Chromium is started and quit by the tests, with a fresh profile and bounded
time; without it these tests fail: scripts/setup.sh installs it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import time

import numpy as np
import pytest
from PIL import Image

import gulpdb
from view_support import (LABELS, browser, frame_pixels, get, javascript_errors, make_dataset,
                          run_async, screenshot_dir, wait_ready)

# How far a thumbnail may be from gulpdb's own decode of its frame: the
# thumbnail is the frame decoded at 1/2 (libjpeg's DCT scaling) and encoded
# again at quality 85, then decoded by Chromium's libjpeg-turbo with its
# accurate IDCT, while the reference is gulpdb's fast-IDCT decode at 1/2.
# Measured on these frames: a mean absolute difference of 0.9 to 1.3 levels
# (99th percentile 6), against 25 or more for the neighbouring frame. The
# bound sits well between the two.
MEAN_TOLERANCE = 4.0


@pytest.fixture(scope="module")
def driver():
    with browser() as d:
        yield d


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("browse") / "ds")
    ids = make_dataset(path, videos=24, frames=8)
    return path, ids


@contextlib.contextmanager
def served(driver, path):
    """A server on `path`, its page loaded (first grid done). The browser
    leaves the page before the server stops, so that no request of the page
    (the charts' polling) is cut by the stop."""
    with gulpdb.view(path) as v:
        driver.get(v.url)
        wait_ready(driver)
        try:
            yield v
        finally:
            driver.get("about:blank")


@pytest.fixture
def page(driver, dataset):
    """The page of a new server on the dataset; no console error while it is up."""
    with served(driver, dataset[0]) as v:
        yield v
        errors = javascript_errors(driver)
        assert errors == [], errors


def shot(driver, name: str) -> str:
    path = os.path.join(screenshot_dir(), name + ".png")
    driver.save_screenshot(path)
    return path


def pixels_of(driver, selector: str) -> np.ndarray:
    """The pixels of the <img> at `selector` as the browser decoded them."""
    url = run_async(driver, """
        const img = document.querySelector(args[0]);
        await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.naturalWidth;
        canvas.height = img.naturalHeight;
        canvas.getContext('2d').drawImage(img, 0, 0);
        return canvas.toDataURL('image/png');""", selector)
    assert isinstance(url, str), url
    png = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def mean_diff(a: np.ndarray, b: np.ndarray) -> float:
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a.astype(int) - b.astype(int)).mean())


def state(driver) -> dict:
    return driver.execute_script("return window.gulpdbView.state()")


def wait_for(driver, condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    shot(driver, "timeout")
    raise AssertionError(f"timed out waiting for {what}")


def test_without_the_token_the_browser_gets_403(driver, dataset):
    with gulpdb.view(dataset[0]) as v:
        driver.get("about:blank")
        driver.delete_all_cookies()
        driver.get(f"http://127.0.0.1:{v.port}/")
        assert "403 forbidden" in driver.find_element("tag name", "body").text
        driver.get(f"http://127.0.0.1:{v.port}/api/info")
        assert "403" in driver.find_element("tag name", "body").text
    driver.get_log("browser")  # the 403s are logged as failed loads; expected here


def test_the_grid_loads_with_the_expected_videos_and_ids(driver, dataset, page):
    path, ids = dataset
    s = state(driver)
    assert s["total"] == 24
    visible = s["visible"]
    assert len(visible) >= 8, visible  # at least two rows of a 1400x900 window
    assert [v["position"] for v in visible] == list(range(len(visible)))
    assert [v["id"] for v in visible] == ids[:len(visible)]
    # What a person sees: the ids and labels in the cells, the count in the header.
    cells = driver.find_elements("css selector", "#grid .cell:not([hidden])")
    shown = [(c.find_element("css selector", ".id").text,
              c.find_element("css selector", ".label").text) for c in cells]
    assert shown == [(ids[i], LABELS[i % 3]) for i in range(len(cells))]
    assert "24 videos" in driver.find_element("id", "count").text
    # The first-paint mark, set once the first thumbnails decoded.
    marks = driver.execute_script(
        "return performance.getEntriesByName('gulpdb-first-grid').length")
    assert marks == 1
    # The token left the address bar once the cookie had it.
    assert "token=" not in driver.current_url
    shot(driver, "view_grid")


def test_a_thumbnail_shows_the_pixels_of_its_frame(driver, dataset, page):
    path, ids = dataset
    with gulpdb.Dataset(path) as ds:
        for position in (0, 5):
            selector = f'#grid .cell[data-position="{position}"] img'
            frame = int(driver.find_element("css selector", selector).get_attribute("data-frame"))
            assert frame == 4  # the middle of 8
            got = pixels_of(driver, selector)
            want = ds.read(ids[position], [frame], downscale=2)[0]
            neighbour = ds.read(ids[position], [frame + 1], downscale=2)[0]
            other = ds.read(ids[position + 1], [frame], downscale=2)[0]
            assert mean_diff(got, want) < MEAN_TOLERANCE
            # The comparison can fail: the next frame, or another video, is far off.
            assert mean_diff(got, neighbour) > 3 * MEAN_TOLERANCE
            assert mean_diff(got, other) > 3 * MEAN_TOLERANCE


def submit_filter(driver, text: str) -> None:
    box = driver.find_element("id", "filter")
    box.clear()
    box.send_keys(text)
    driver.find_element("css selector", "#filter-form button[type=submit]").click()


def test_a_filter_and_a_split_change_the_grid(driver, dataset, page):
    path, ids = dataset
    owls = [i for k, i in enumerate(ids) if LABELS[k % 3] == "owl"]
    submit_filter(driver, "label=owl")
    wait_for(driver, lambda: state(driver)["total"] == len(owls) and
             [v["id"] for v in state(driver)["visible"]] == owls, "the owls")
    for cell in driver.find_elements("css selector", "#grid .cell:not([hidden]) .label"):
        assert cell.text == "owl"
    shot(driver, "view_filter")
    # The query language, as `gulpdb ls --where` takes it.
    not_owls = [i for k, i in enumerate(ids) if LABELS[k % 3] != "owl"]
    submit_filter(driver, "label in ('cat', 'dog') or not has label")

    def shows_all_but_the_owls() -> bool:
        s = state(driver)
        shown = [v["id"] for v in s["visible"]]
        return s["total"] == len(not_owls) and shown and shown == not_owls[:len(shown)]
    wait_for(driver, shows_all_but_the_owls, "every video but the owls")
    # A filter the engine refuses says why, and shows nothing.
    submit_filter(driver, "label")
    error = driver.find_element("id", "filter-error")
    wait_for(driver, lambda: error.is_displayed() and "expected an operator" in error.text, "the error")
    assert state(driver)["total"] == 0
    driver.get_log("browser")  # the refused request (HTTP 400) is logged as a failed load
    driver.find_element("id", "clear").click()
    wait_for(driver, lambda: state(driver)["total"] == 24, "all videos again")
    # The split selector.
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("id", "split")).select_by_value("train")
    wait_for(driver, lambda: [v["id"] for v in state(driver)["visible"]] == ids[::3], "the split")
    submit_filter(driver, "label=cat")
    wait_for(driver, lambda: [v["id"] for v in state(driver)["visible"]] == ids[::3],
             "the split's cats (every third video is a cat)")
    submit_filter(driver, "label=dog")
    wait_for(driver, lambda: state(driver)["total"] == 0, "no dog in the split")


def test_opening_a_video_plays_its_frames_in_order(driver, dataset, page):
    path, ids = dataset
    driver.find_element("css selector", '#grid .cell[data-position="2"]').click()
    player = driver.find_element("id", "player")
    wait_for(driver, lambda: player.get_attribute("data-frame") == "0", "frame 0")
    assert driver.find_element("id", "v-title").text == ids[2]
    wait_for(driver, lambda: "healthy" in driver.find_element("id", "v-check").text,
             "the check status")
    assert len(driver.find_elements("css selector", "#strip .f")) == 8
    with gulpdb.Dataset(path) as ds:
        # The player shows each frame at its own size, as stored.
        assert mean_diff(pixels_of(driver, "#player"), ds.read(ids[2], [0])[0]) < 2.0
        driver.find_element("id", "next").click()
        wait_for(driver, lambda: player.get_attribute("data-frame") == "1", "frame 1")
        assert mean_diff(pixels_of(driver, "#player"), ds.read(ids[2], [1])[0]) < 2.0
        assert mean_diff(pixels_of(driver, "#player"), ds.read(ids[2], [0])[0]) > 10.0
    shot(driver, "view_video")
    # Play from the start at 8 frames a second; sample what is shown.
    driver.find_element("css selector", '#strip .f[data-frame="0"]').click()
    wait_for(driver, lambda: player.get_attribute("data-frame") == "0", "back to frame 0")
    # Every frame the player puts on screen, recorded by the page itself (a
    # poll from here could miss one on a busy machine).
    driver.execute_script("""
        const el = document.getElementById('player');
        window.framesShown = [Number(el.dataset.frame)];
        new MutationObserver(() => {
          const f = Number(el.dataset.frame);
          if (window.framesShown[window.framesShown.length - 1] !== f) window.framesShown.push(f);
        }).observe(el, {attributes: true, attributeFilter: ['data-frame']});""")
    driver.find_element("id", "play").click()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not driver.execute_script("return window.gulpdbView.player()")["playing"]:
            break
        time.sleep(0.05)
    seen = driver.execute_script("return window.framesShown")
    assert seen == list(range(8)), seen  # every frame, in order, none skipped
    assert driver.find_element("id", "play").text == "play"
    driver.find_element("id", "back").click()
    wait_for(driver, lambda: not driver.find_element("id", "video-page").is_displayed(), "the grid")


def test_hovering_a_thumbnail_plays_its_clip(driver, dataset, page):
    from selenium.webdriver.common.action_chains import ActionChains
    cell = driver.find_element("css selector", '#grid .cell[data-position="1"]')
    img = cell.find_element("css selector", "img")
    ActionChains(driver).move_to_element(cell).perform()
    frames = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(frames) < 4:
        frames.add(img.get_attribute("data-frame"))
        time.sleep(0.05)
    assert len(frames) >= 4, frames
    ActionChains(driver).move_by_offset(0, 600).perform()  # away: back to the middle frame
    wait_for(driver, lambda: img.get_attribute("data-frame") == "4", "the middle frame again")


def test_the_charts_come_after_the_first_grid_and_filter_on_click(driver, dataset, page):
    charts = driver.find_element("id", "labels-chart")
    wait_for(driver, lambda: "from the meta index" in charts.text and len(
        driver.find_elements("css selector", "#labels-chart g.bar")) == 3, "the label chart")
    frames = driver.find_element("id", "frames-chart")
    wait_for(driver, lambda: "counting" not in frames.text and "8" in frames.text,
             "the frames chart")
    assert driver.execute_script(
        "return performance.getEntriesByName('gulpdb-first-grid').length") == 1
    bars = driver.find_elements("css selector", "#labels-chart g.bar")
    assert sorted(b.get_attribute("data-value") for b in bars) == ['"cat"', '"dog"', '"owl"']
    assert "frames per video" in driver.find_element("id", "frames-chart").text
    shot(driver, "view_charts")
    dog = [b for b in bars if b.get_attribute("data-value") == '"dog"'][0]
    dog.find_element("css selector", "rect").click()
    wait_for(driver, lambda: state(driver)["total"] == 8, "the dogs")
    assert driver.find_element("id", "filter").get_attribute("value") == 'label="dog"'


def test_a_damaged_frame_is_shown_as_damaged(driver, tmp_path):
    path = str(tmp_path / "damaged")
    ids = make_dataset(path, videos=4, frames=8, split=False)
    with gulpdb.Dataset(path) as ds:
        info = ds.info(ids[1])
        chunk = os.path.join(path, [c for c in ds.chunks() if c.number == info.chunk][0].file_name)
    offset, pad, length = info.frame_info[4]  # the middle frame: the grid's thumbnail
    with open(chunk, "r+b") as f:
        f.seek(offset + (length - pad) // 2)
        f.write(b"\x00" * 64)
    with served(driver, path) as v:
        cell = driver.find_element("css selector", '#grid .cell[data-position="1"]')
        wait_for(driver, lambda: "damaged" in cell.text, "the damaged thumbnail")
        assert "CRC-32C" in cell.text or "checksum" in cell.text.lower()
        # The other videos are fine.
        assert "damaged" not in driver.find_element(
            "css selector", '#grid .cell[data-position="0"]').text
        shot(driver, "view_damaged_grid")
        cell.click()
        check = driver.find_element("id", "v-check")
        wait_for(driver, lambda: "frame 4" in check.text, "the check status of frame 4")
        assert "CRC-32C mismatch" in check.text
        driver.find_element("css selector", '#strip .f[data-frame="4"]').click()
        error = driver.find_element("id", "player-error")
        wait_for(driver, lambda: error.is_displayed() and "frame 4 is damaged" in error.text,
                 "the player's error")
        driver.find_element("id", "next").click()  # frame 5 plays again
        wait_for(driver, lambda: not error.is_displayed(), "frame 5")
        shot(driver, "view_damaged_video")
        status, _, _ = get(v.port, f"/api/info", token=v.url.split("token=")[1])
        assert status == 200  # the server is fine
        logs = driver.get_log("browser")
        # The damaged frame's failed loads are logged by the browser as network
        # errors; no JavaScript error.
        assert [e for e in logs if e.get("level") == "SEVERE" and e.get("source") != "network"] == []


def test_the_grid_scrolls_to_any_position_of_a_large_dataset(driver, tmp_path):
    path = str(tmp_path / "many")
    tiny = np.stack([frame_pixels(0, 0, 24, 32)])
    with gulpdb.Dataset(path, "x", videos_per_chunk=100) as ds:
        with ds.writer() as w:
            for i in range(3000):
                w.append(f"clip{i:05d}", tiny, {"label": LABELS[i % 3]})
    with served(driver, path):
        assert state(driver)["total"] == 3000
        run_async(driver, "await window.gulpdbView.goTo(2500);")
        visible = state(driver)["visible"]
        positions = [x["position"] for x in visible]
        assert 2500 in positions
        for x in visible:
            assert x["id"] == f"clip{x['position']:05d}"
        run_async(driver, "await window.gulpdbView.goTo(2999);")
        assert 2999 in [x["position"] for x in state(driver)["visible"]]
        shot(driver, "view_scrolled")
        assert javascript_errors(driver) == []


@pytest.mark.h264
def test_an_h264_dataset_shows_decoded_frames(driver, tmp_path):
    path = str(tmp_path / "h264")
    ids = make_dataset(path, videos=3, frames=8, codec="h264", split=False)
    with served(driver, path):
        assert [x["id"] for x in state(driver)["visible"]] == ids
        got = pixels_of(driver, '#grid .cell[data-position="1"] img')
        with gulpdb.Dataset(path) as ds:
            want = ds.read(ids[1], [4], size=(120, 160), resize="stretch")[0]
            other = ds.read(ids[1], [5], size=(120, 160), resize="stretch")[0]
        assert mean_diff(got, want) < MEAN_TOLERANCE
        assert mean_diff(got, other) > 3 * MEAN_TOLERANCE
        driver.find_element("css selector", '#grid .cell[data-position="1"]').click()
        player = driver.find_element("id", "player")
        wait_for(driver, lambda: player.get_attribute("data-frame") == "0", "frame 0")
        assert javascript_errors(driver) == []


def test_the_version_selector_shows_a_tag_and_head(driver, tmp_path):
    """A tag, then an append and a relabel: selecting the tag shows its
    videos and labels (and its charts, its video page); HEAD shows the
    change; a tag deleted while the page is open is said on the page."""
    from selenium.webdriver.support.ui import Select
    path = str(tmp_path / "versions")
    ids = make_dataset(path, videos=6, frames=4, split=False)
    with gulpdb.Dataset(path) as ds:
        assert ds.versions() == []
    with served(driver, path):
        # No tags: no selector.
        assert not driver.find_element("id", "version").is_displayed()
    with gulpdb.Dataset(path, "a") as ds:
        ds.tag("before-fix")
        with ds.writer() as w:
            w.append("late", np.stack([frame_pixels(9, 0)]), {"label": "owl"})
            w.update_meta(ids[0], {"label": "zebra"})

    def cells():
        return [(c.find_element("css selector", ".id").text,
                 c.find_element("css selector", ".label").text)
                for c in driver.find_elements("css selector", "#grid .cell:not([hidden])")]

    with served(driver, path):
        selector = driver.find_element("id", "version")
        assert selector.is_displayed()
        options = [o.text for o in Select(selector).options]
        assert options[0].startswith("HEAD") and len(options) == 2
        assert options[1].startswith("before-fix") and options[1].endswith("6 videos")
        assert Select(selector).first_selected_option.get_attribute("value") == "HEAD"
        assert cells()[0] == (ids[0], "zebra") and ("late", "owl") in cells()
        chart = driver.find_element("id", "labels-chart")
        wait_for(driver, lambda: "zebra" in chart.text, "HEAD's label chart")
        Select(selector).select_by_value("before-fix")
        wait_for(driver, lambda: state(driver)["total"] == 6 and cells()
                 and cells()[0] == (ids[0], LABELS[0]), "the tag's grid")
        assert cells() == [(id_, LABELS[i % 3]) for i, id_ in enumerate(ids)]
        assert "6 videos" in driver.find_element("id", "count").text
        assert driver.find_element("id", "version-name").text == "version before-fix"
        # The charts count the tag: no zebra.
        wait_for(driver, lambda: LABELS[0] in chart.text and "zebra" not in chart.text,
                 "the tag's label chart")
        # The video page reads the tag.
        driver.find_element("css selector", '#grid .cell[data-position="0"]').click()
        details = driver.find_element("id", "v-details")
        wait_for(driver, lambda: LABELS[0] in details.text, "the tag's video page")
        assert "zebra" not in driver.find_element("id", "v-meta").text
        player = driver.find_element("id", "player")
        wait_for(driver, lambda: player.get_attribute("data-frame") == "0", "frame 0")
        shot(driver, "view_version_video")
        driver.find_element("id", "back").click()
        shot(driver, "view_version_grid")
        # Back to HEAD.
        Select(selector).select_by_value("HEAD")
        wait_for(driver, lambda: state(driver)["total"] == 7 and cells()
                 and cells()[0] == (ids[0], "zebra"), "HEAD's grid")
        # The tag deleted while the page is open: selecting it says so.
        with gulpdb.Dataset(path, "a") as ds:
            ds.delete_tag("before-fix", grace_seconds=0)
        Select(selector).select_by_value("before-fix")
        error = driver.find_element("id", "filter-error")
        wait_for(driver, lambda: error.is_displayed() and "the tag was deleted" in error.text,
                 "the deleted tag's message")
        assert Select(selector).first_selected_option.get_attribute("value") == "HEAD"
        assert state(driver)["total"] == 7
        # The list no longer offers it.
        wait_for(driver, lambda: [o.get_attribute("value") for o in Select(selector).options]
                 == ["HEAD"], "the list without the deleted tag")
        shot(driver, "view_version_deleted")
        # The refused request is logged by the browser as a network error; no
        # JavaScript error.
        logs = driver.get_log("browser")
        assert [e for e in logs if e.get("level") == "SEVERE" and e.get("source") != "network"] == []
