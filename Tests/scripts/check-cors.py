#!/usr/bin/env python3
"""Calls the API from pages on other origins in a real headless Chromium:
what `--cors-origin` allows works, what it does not is blocked.

Usage: check-cors.py PATH/TO/topchrome

Serves one small page from two more loopback ports (two other origins), and
starts the server with `--cors-origin` naming only the first. From the
allowed page: fetch() creates a session with a JSON body (a preflighted
request, with an Authorization header too), reads its ETag and Location,
scrolls with If-Match, reads a 412 problem, and an EventSource gets the state
and then a change. From the other page the same calls fail as browsers make
them fail: the preflight is refused so the create is never sent, and a
simple GET or an event stream cannot be read. Installs Chromium,
chromedriver and selenium when missing (scripts/install-browser.sh).

Takes ≈ 30 s (Chromium).
"""
import http.server
import json
import re
import sys
import threading
import urllib.request

from live_server import CHROMEDRIVER, CHROMIUM, ensure_browser, start_server, stop_server

ensure_browser(__file__)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>another origin</title>
<script>
// Every call a page on another origin makes; each step says what it saw,
// or the error the browser gave (a CORS refusal is a TypeError).
async function step(name, results, body) {
  try { results[name] = await body(); } catch (error) { results[name] = {error: String(error)}; }
}

function firstMessages(url, count, onOpen) {
  return new Promise(resolve => {
    const source = new EventSource(url), data = [];
    const timer = setTimeout(() => { source.close(); resolve({messages: data, timedOut: true}); }, 5000);
    source.addEventListener("state", event => {
      data.push(JSON.parse(event.data));
      if (data.length === 1 && onOpen) onOpen();
      if (data.length === count) { clearTimeout(timer); source.close(); resolve({messages: data}); }
    });
    source.onerror = () => { clearTimeout(timer); source.close(); resolve({messages: data, error: true}); };
  });
}

async function run(base, existing) {
  const results = {}, json = {"Content-Type": "application/json", "Authorization": "Bearer unused"};
  await step("create", results, async () => {
    const response = await fetch(base + "/v1/sessions", {method: "POST", headers: json, body: JSON.stringify({inset: 59})});
    return {status: response.status, etag: response.headers.get("ETag"), location: response.headers.get("Location"),
            body: await response.json()};
  });
  const id = results.create.body ? results.create.body.id : existing;
  await step("scroll", results, async () => {
    const response = await fetch(base + "/v1/sessions/" + id + "/scroll", {
      method: "POST", headers: {...json, "If-Match": results.create.etag || '"1"'}, body: JSON.stringify({contentOffsetY: 500})});
    return {status: response.status, etag: response.headers.get("ETag"), body: await response.json()};
  });
  await step("stale", results, async () => {
    const response = await fetch(base + "/v1/sessions/" + id + "/scroll", {
      method: "POST", headers: {...json, "If-Match": '"1"'}, body: JSON.stringify({contentOffsetY: 0})});
    return {status: response.status, type: response.headers.get("Content-Type"), body: await response.json()};
  });
  await step("read", results, async () => {
    const response = await fetch(base + "/v1/sessions/" + id);
    return {status: response.status, etag: response.headers.get("ETag")};
  });
  await step("events", results, () => firstMessages(base + "/v1/sessions/" + id + "/events", 2, () =>
    fetch(base + "/v1/sessions/" + id + "/scroll", {method: "POST", headers: json, body: JSON.stringify({contentOffsetY: 0})})
      .catch(() => {})));
  return results;
}
</script>
<p>A page on another origin.</p>
"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve_page():
    """The page on a free loopback port: another origin than the server's."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def counted(base, pattern):
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    return sum(float(value) for value in re.findall(r"^" + pattern + r" (\S+)$", text, re.M))


class Check:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, passed, detail=""):
        if passed:
            self.passed += 1
        else:
            self.failed += 1
        print(("ok   " if passed else "FAIL ") + name + ("" if passed else f": {detail}"))


def run_page(driver, page, base, existing=None):
    driver.get(page + "/")
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "run(arguments[0], arguments[1]).then(done, error => done({error: String(error)}));", base, existing)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    allowed_page, allowed = serve_page()
    other_page, other = serve_page()
    server, base = start_server(sys.argv[1], "--log-level", "warn", "--cors-origin", allowed)
    print(f"server at {base}, allowed page at {allowed}, other page at {other}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    check, driver = Check(), None
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(20)
        driver.set_script_timeout(30)

        seen = run_page(driver, allowed, base)
        create, scroll, stale = seen.get("create", {}), seen.get("scroll", {}), seen.get("stale", {})
        check.check("allowed: POST with a JSON body and Authorization passes the preflight, 201",
                    create.get("status") == 201, create)
        check.check("allowed: ETag and Location can be read", str(create.get("etag", "")).startswith('"1.')
                    and str(create.get("location", "")).startswith("/v1/sessions/"), create)
        check.check("allowed: a scroll with If-Match applies", scroll.get("status") == 200
                    and str(scroll.get("etag", "")).startswith('"2.') and scroll.get("body", {}).get("isRevealed") is False, scroll)
        check.check("allowed: a 412 problem can be read", stale.get("status") == 412
                    and stale.get("type") == "application/problem+json" and stale.get("body", {}).get("status") == 412, stale)
        check.check("allowed: a GET reads the ETag", str(seen.get("read", {}).get("etag", "")).startswith('"2.'), seen.get("read"))
        messages = seen.get("events", {}).get("messages", [])
        check.check("allowed: EventSource gets the state, then a change",
                    [m.get("version") for m in messages] == [2, 3] and messages[-1].get("isRevealed") is True,
                    seen.get("events"))

        session = create.get("body", {}).get("id")
        preflights_refused = counted(base, r'topchrome_http_requests_total\{method="OPTIONS",route="[^"]*",status="403"\}')
        creates = counted(base, r'topchrome_http_requests_total\{method="POST",route="/v1/sessions",status="201"\}')
        seen = run_page(driver, other, base, session)
        for name in ("create", "scroll", "stale", "read"):
            error = seen.get(name, {}).get("error", "")
            check.check(f"other origin: {name} is blocked (TypeError)", "TypeError" in error, seen.get(name))
        events = seen.get("events", {})
        check.check("other origin: EventSource gets nothing", events.get("error") is True and not events.get("messages"), events)
        check.check("other origin: its preflights were refused (403)",
                    counted(base, r'topchrome_http_requests_total\{method="OPTIONS",route="[^"]*",status="403"\}')
                    >= preflights_refused + 3)
        check.check("other origin: the create never reached the API",
                    counted(base, r'topchrome_http_requests_total\{method="POST",route="/v1/sessions",status="201"\}') == creates)
    except Exception as error:
        check.check("the run finished", False, f"{type(error).__name__}: {error}")
    finally:
        if driver is not None:
            driver.quit()
        stop_server(server)
        for page in (allowed_page, other_page):
            page.shutdown()
            page.server_close()
    print(f"cors: {check.passed} passed, {check.failed} failed")
    return 0 if check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
