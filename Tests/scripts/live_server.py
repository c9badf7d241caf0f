"""What the Python checks that drive a real server share (check-readme,
check-metrics, check-cors, check-demo): a free loopback port, the server
started on one until it says where it listens, and the headless browser's
tools. Imported, never run; standard library only.

Checks nothing and takes no time itself.
"""
import os
import re
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_PYTHON = os.path.join(ROOT, ".build", "python", "bin", "python")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def free_port():
    """A port of 127.0.0.1 the kernel just handed out (rarely taken by someone else meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(binary, *flags, within=15):
    """Starts BINARY --port 0 FLAGS and waits for its start line, which may
    follow warnings (a descriptor limit below --max-connections) and carry
    a log prefix. Returns the process and its base URL (http or https).
    Its output is read on a thread all along, so a chatty server never
    blocks on a full pipe; `lines` of the process holds it."""
    server = subprocess.Popen([binary, "--port", "0", *flags], stdout=subprocess.PIPE, text=True)
    server.lines = []
    threading.Thread(target=lambda: [server.lines.append(line) for line in server.stdout], daemon=True).start()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for line in list(server.lines):
            match = re.search(r"listening on (https?://[^\s\"]+)", line)
            if match:
                return server, match.group(1)
        if server.poll() is not None:
            break
        time.sleep(0.02)
    server.kill()
    raise RuntimeError(f"the server printed no start line: {''.join(server.lines)!r}")


def stop_server(server):
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()


def ensure_browser(script):
    """Installs Chromium, chromedriver and selenium when missing
    (scripts/install-browser.sh); re-runs SCRIPT under the project's venv
    when selenium is there and not in this Python."""
    try:
        import selenium  # noqa: F401
        have_selenium = True
    except ImportError:
        have_selenium = False
    if have_selenium and os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return
    subprocess.run([os.path.join(ROOT, "scripts", "install-browser.sh")], check=True)
    if not have_selenium and os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(ROOT, ".build", "python")):
        os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(script), *sys.argv[1:]])
