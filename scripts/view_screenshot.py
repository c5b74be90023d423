#!/usr/bin/python3
"""The README's picture of `gulpdb view`: the page of a dataset in headless
Chromium (tests/harness/headless_chromium.py, as the browser tests drive it), its
first grid and charts done, saved as a PNG.

    PYTHONPATH=build/release/python scripts/view_screenshot.py build/sample_dataset docs/view_grid.png
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "harness"))

import gulpdb  # noqa: E402
import headless_chromium  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dataset, out = sys.argv[1], sys.argv[2]
    with gulpdb.view(dataset) as viewer:
        with headless_chromium.browser(window="1280,720") as driver:
            driver.get(viewer.url)
            headless_chromium.wait_ready(driver)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # the charts' count
                note = driver.find_element("id", "charts-note").text
                if "counting" not in note and driver.find_elements(
                        "css selector", "#frames-chart svg"):
                    break
                time.sleep(0.2)
            time.sleep(0.5)  # the last chart painted
            driver.save_screenshot(out)
            errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            if errors:
                sys.exit(f"console errors: {errors}")
    print(out)


if __name__ == "__main__":
    main()
