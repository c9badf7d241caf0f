#!/usr/bin/env python3
"""Drives the demo page (`GET /`) in a real headless Chromium and checks that
its island follows the service's state.

Usage: check-demo.py PATH/TO/topchrome

Starts the server on a free port, loads the page, and scrolls as a person
would (wheel input): down, so the service says hidden and the island hides;
the horizontal row sideways, so the service gets horizontal reports and the
island stays hidden; back to the top, so it returns. Then the service alone
hides the island while the page stands at the top (the page must not decide
from its own scroll position). The behaviour picker then makes the session
enterAlways: a short scroll collapses the island part way, a scroll back up far
down the page brings it back part way, snapping settles it when the gesture
ends, and the panel shows the service's collapsedFraction and its events.
Leaving the page reveals the island again (`/disappear` on pagehide). All of
it on the session's WebSocket; then, with `?channel=events`, the page on the
event stream and requests (its fallback) scrolls down and back. Screenshots of each step go to
test-results/demo/NN-step.png. Installs Chromium, chromedriver and selenium
when missing (scripts/install-browser.sh).

Takes ≈ 30 s (Chromium).
"""
import json
import os
import re
import sys
import time
import urllib.request

from live_server import CHROMEDRIVER, CHROMIUM, ROOT, ensure_browser, start_server, stop_server

SHOTS = os.path.join(ROOT, "test-results", "demo")

ensure_browser(__file__)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


class Failed(Exception):
    pass


class Check:
    def __init__(self, driver, base):
        self.driver, self.base = driver, base
        self.passed = self.failed = 0
        self.shot = 0

    # --- the service, seen from outside the browser ---
    def fetch(self, path, method="GET", body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data else {})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read().decode()

    def service(self):
        return json.loads(self.fetch(f"/v1/sessions/{self.session}"))

    def horizontal_reports(self):
        text = self.fetch("/metrics")
        match = re.search(r'^topchrome_scroll_reports_total\{outcome="horizontal"\} (\d+)', text, re.M)
        if not match:
            raise Failed("/metrics has no topchrome_scroll_reports_total{outcome=\"horizontal\"}")
        return int(match.group(1))

    # --- the page ---
    def island(self):
        element = self.driver.find_element(By.ID, "island")
        return {"revealed": element.get_attribute("data-revealed"), "version": element.get_attribute("data-version"),
                "behavior": element.get_attribute("data-behavior"), "fraction": element.get_attribute("data-fraction"),
                "displayed": element.is_displayed()}

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    # --- checking ---
    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {detail}" if detail else ""))
        return condition

    def wait(self, name, probe, timeout=10.0):
        """Passes once probe() returns (True, detail) within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                ok, detail = probe()
            except Exception as error:  # a probe that fails is a failed check, not a crash
                ok, detail = False, f"{type(error).__name__}: {error}"
            if ok or time.monotonic() > deadline:
                return self.check(name, ok, f"after {timeout:g} s: {detail}")
            time.sleep(0.1)

    def screenshot(self, step):
        # The island slides for a quarter second: shoot it where it came to rest.
        deadline = time.monotonic() + 3
        while self.js("return document.getAnimations().length") and time.monotonic() < deadline:
            time.sleep(0.05)
        self.shot += 1
        path = os.path.join(SHOTS, f"{self.shot:02d}-{step}.png")
        self.driver.save_screenshot(path)
        print(f"     screenshot {os.path.relpath(path, ROOT)}")

    def island_is(self, revealed):
        """A probe: the service and the page's island both say `revealed`, and
        the page shows the service's current version."""
        def probe():
            state, island = self.service(), self.island()
            ok = (state["isRevealed"] == revealed and island["revealed"] == str(revealed).lower()
                  and island["displayed"] == revealed and island["version"] == str(state["version"]))
            return ok, f"service {state}, island {island}"
        return probe

    def island_follows(self, behavior, fraction_ok):
        """A probe: the service has `behavior` and a collapsedFraction that
        fraction_ok accepts, and the page's island (hidden only when fully
        collapsed), its panel and its last event show that state."""
        def probe():
            state, island = self.service(), self.island()
            fraction = state.get("collapsedFraction", 0 if state["isRevealed"] else 1)
            panel = self.js("return document.getElementById('fraction').textContent")
            event = self.js("return document.querySelector('#events li')?.textContent ?? ''")
            ok = (state.get("behavior", "revealAtTop") == behavior and fraction_ok(fraction)
                  and island["behavior"] == behavior and island["fraction"] is not None
                  and float(island["fraction"]) == fraction and float(panel) == fraction
                  and island["version"] == str(state["version"]) and event.startswith(f"v{state['version']} ")
                  and island["displayed"] == (fraction < 1))
            return ok, f"service {state}, island {island}, panel {panel}, last event {event!r}"
        return probe

    def scroll(self, dy):
        before = self.js("return window.scrollY")
        ActionChains(self.driver).scroll_by_amount(0, dy).perform()
        self.wait(f"page scrolled by {dy}", lambda: (self.js("return window.scrollY") != before,
                                                     f"{before} -> {self.js('return window.scrollY')}"))

    def behaviors(self):
        """The picker: enterAlways tracks the finger anywhere on the page; snap settles it."""
        Select(self.driver.find_element(By.ID, "behavior")).select_by_value("enterAlways")
        self.wait("picker: the service's behaviour is enterAlways, the island shown",
                  self.island_follows("enterAlways", lambda f: f == 0))
        self.check("page at the top", self.js("return window.scrollY") == 0)
        self.scroll(40)
        self.wait("a short scroll: collapsed part way, island still shown",
                  self.island_follows("enterAlways", lambda f: 0 < f < 1))
        self.screenshot("enter-always-part-way")
        self.scroll(1200)
        self.wait("far down: fully collapsed, island hidden", self.island_follows("enterAlways", lambda f: f == 1))
        self.scroll(-30)
        self.wait("pulled down far from the top: the island comes back part way",
                  self.island_follows("enterAlways", lambda f: 0 < f < 1))
        self.check("page is still far down", self.js("return window.scrollY") > 200)
        self.screenshot("enter-always-back-far-down")
        events = self.js("return document.querySelectorAll('#events li').length")
        self.check("the panel lists the events", events >= 4, f"{events} events")

        self.driver.find_element(By.ID, "snap").click()
        self.wait("snap on: the service snaps", lambda: (self.service().get("snap") is True, self.service()))
        self.scroll(-20)
        self.wait("the gesture ended: snapped fully shown or hidden", self.island_follows("enterAlways", lambda f: f in (0, 1)))
        self.screenshot("enter-always-snapped")

        self.driver.find_element(By.ID, "snap").click()
        Select(self.driver.find_element(By.ID, "behavior")).select_by_value("revealAtTop")
        self.wait("picker: back to revealAtTop", lambda: (self.service().get("behavior", "revealAtTop") == "revealAtTop"
                                                          and self.service().get("snap", False) is False, self.service()))
        self.scroll(-(self.js("return window.scrollY") + 500))
        self.wait("revealAtTop at the top: island shown", self.island_is(True))

    def run(self):
        driver = self.driver
        driver.get(self.base + "/")
        self.wait("page created a session", lambda: (bool(self.js("return document.documentElement.dataset.session")),
                                                      self.js("return document.getElementById('line').textContent")))
        self.session = self.js("return document.documentElement.dataset.session")
        self.wait("first state: revealed, island shown", self.island_is(True))
        self.wait("the page follows on the session's WebSocket",
                  lambda: (self.js("return document.documentElement.dataset.channel") == "socket",
                           self.js("return document.documentElement.dataset.channel")))
        state = self.service()
        inset = self.js("return Math.ceil(document.getElementById('island').getBoundingClientRect().bottom)")
        self.check("session inset is the chrome's height", state["inset"] == inset, f"{state['inset']} != {inset}")
        self.screenshot("top-revealed")

        # Down, with the wheel, until the horizontal row stands in the middle of the viewport.
        distance = self.js("const r = document.getElementById('row').getBoundingClientRect();"
                           "return Math.round(r.top + r.height / 2 - window.innerHeight / 2)")
        self.check("the row is below the fold", distance > 0, f"distance {distance}")
        ActionChains(driver).scroll_by_amount(0, distance).perform()
        self.wait("page scrolled down", lambda: (self.js("return window.scrollY") > 200, self.js("return window.scrollY")))
        self.wait("scrolled down: service says hidden, island hidden", self.island_is(False))
        self.screenshot("scrolled-down-hidden")

        # The row sideways, with the wheel over it (deltaX).
        before_reports, before_state = self.horizontal_reports(), self.service()
        row = driver.find_element(By.ID, "row")
        ActionChains(driver).scroll_from_origin(ScrollOrigin.from_element(row), 600, 0).perform()
        self.wait("row scrolled sideways", lambda: (self.js("return arguments[0].scrollLeft", row) > 100,
                                                    self.js("return arguments[0].scrollLeft", row)))
        self.wait("server received horizontal reports", lambda: (self.horizontal_reports() > before_reports,
                                                                 f"{before_reports} -> {self.horizontal_reports()}"))
        time.sleep(1.0)  # give a wrong reveal time to arrive
        self.wait("row scrolled: service still hidden, island still hidden", self.island_is(False), timeout=0.5)
        after_state = self.service()
        self.check("horizontal reports changed nothing (same version)", after_state["version"] == before_state["version"],
                   f"{before_state} -> {after_state}")
        self.check("page is still far down", self.js("return window.scrollY") > 200)
        self.screenshot("row-scrolled-still-hidden")

        # Back to the top, with the wheel.
        ActionChains(driver).scroll_by_amount(0, -(self.js("return window.scrollY") + 500)).perform()
        self.wait("page back at the top", lambda: (self.js("return window.scrollY") == 0, self.js("return window.scrollY")))
        self.wait("at the top: service says revealed, island shown", self.island_is(True))
        self.screenshot("top-revealed-again")

        # The island follows the service, not the page: a report from elsewhere
        # (no seq, so always applied) hides it while the page stands at the top.
        self.fetch(f"/v1/sessions/{self.session}/scroll", "POST", {"contentOffsetY": 500})
        self.wait("service hides it while the page is at the top: island hidden", self.island_is(False))
        self.check("page did not move", self.js("return window.scrollY") == 0)
        self.screenshot("top-hidden-by-service")
        self.fetch(f"/v1/sessions/{self.session}/scroll", "POST", {"contentOffsetY": 0})
        self.wait("service reveals it again: island shown", self.island_is(True))

        self.behaviors()

        # Leaving the page (pagehide) posts /disappear, which reveals.
        ActionChains(driver).scroll_by_amount(0, 1200).perform()
        self.wait("scrolled down again: hidden", self.island_is(False))
        driver.get("about:blank")

        def revealed_after_leaving():
            state = self.service()
            return state["isRevealed"], state
        self.wait("leaving the page: service says revealed", revealed_after_leaving)

    def run_without_socket(self):
        """Where the socket cannot open, the event stream and requests do the same."""
        self.driver.get(self.base + "/?channel=events")
        self.wait("page created a session (event stream)",
                  lambda: (self.js("return document.documentElement.dataset.channel") == "events",
                           self.js("return document.getElementById('line').textContent")))
        self.session = self.js("return document.documentElement.dataset.session")
        self.wait("event stream: first state, island shown", self.island_is(True))
        ActionChains(self.driver).scroll_by_amount(0, 1200).perform()
        self.wait("event stream: scrolled down, island hidden", self.island_is(False))
        ActionChains(self.driver).scroll_by_amount(0, -(self.js("return window.scrollY") + 500)).perform()
        self.wait("event stream: back at the top, island shown", self.island_is(True))


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    os.makedirs(SHOTS, exist_ok=True)
    for name in os.listdir(SHOTS):
        if name.endswith(".png"):
            os.remove(os.path.join(SHOTS, name))
    try:
        server, base = start_server(sys.argv[1], "--log-level", "warn")
    except (OSError, RuntimeError) as error:
        print(f"FAIL the server started: {error}")
        print("demo: 0 passed, 1 failed")
        return 1
    print(f"server at {base}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1000,800", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver, check = None, None
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(20)
        check = Check(driver, base)
        check.run()
        check.run_without_socket()
    except Exception as error:
        if check is None:
            check = Check(None, base)
        check.check("the run finished", False, f"{type(error).__name__}: {error}")
    finally:
        if check.failed and driver is not None:
            try:
                for entry in driver.get_log("browser"):
                    print(f"     browser console: {entry['level']} {entry['message']}")
            except Exception:
                pass
        if driver is not None:
            driver.quit()
        stop_server(server)
    print(f"demo: {check.passed} passed, {check.failed} failed")
    return 0 if check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
