#!/usr/bin/env python3
"""Runs every example of the README's walkthrough against a live server.

Usage: check-readme.py PATH/TO/topchrome

Every ```sh block of README.md is run, in order, in one bash, against a fresh
server on a free port. The README's convention: the first block sets
`BASE=http://127.0.0.1:8080`, and every curl command names its server through
a variable ending in BASE (`$BASE`, `$TOKEN_BASE`), never a literal URL, so a
reader changes the port in one place; this check enforces it. It rewrites
127.0.0.1:8080 to the server it started, any other 127.0.0.1:PORT (with the
matching `--port PORT`) to another free port, for servers the examples start
themselves, and `.build/release/topchrome` to the binary given. A command
ending in `# NNN` must print an HTTP status line with NNN (the README uses
`curl -i` for those); every other command must exit 0. Background jobs the
examples leave are stopped at the end. So the README cannot drift from what
the server does.

Takes ≈ 20 s.
"""
import os
import re
import subprocess
import sys
import tempfile

from live_server import ROOT, free_port, start_server, stop_server


def sh_blocks(markdown):
    return re.findall(r"^```sh\n(.*?)^```", markdown, flags=re.S | re.M)


def convention_faults(blocks):
    """Lines that break the BASE convention: a curl with a literal URL, or a
    first block that does not set BASE."""
    faults = []
    if not blocks or not re.search(r"^BASE=http://127\.0\.0\.1:8080$", blocks[0], flags=re.M):
        faults.append("the first ```sh block must set BASE=http://127.0.0.1:8080")
    for block in blocks:
        for line in block.splitlines():
            if re.search(r"\bcurl\b", line) and (re.search(r"https?://", line) or not re.search(r"\$\{?[A-Z_]*BASE\b", line)):
                faults.append(f"curl without $BASE: {line}")
    return faults


def rewrite(block, base_url, binary, ports):
    block = block.replace("http://127.0.0.1:8080", base_url).replace(".build/release/topchrome", binary)
    for readme_port, port in ports.items():
        block = block.replace(f"127.0.0.1:{readme_port}", f"127.0.0.1:{port}")
        block = re.sub(rf"--port {readme_port}\b", f"--port {port}", block)
    return block


def to_bash(blocks, base_url, binary):
    others = sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", "\n".join(blocks))) - {"8080"})
    ports = {readme_port: free_port() for readme_port in others}
    lines = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT", "check() {",
             '  local want=$1 got; got=$(printf "%s" "$2" | sed -n "s/^HTTP\\/1.1 \\([0-9]*\\).*/\\1/p" | tail -n1)',
             '  if [ "$got" != "$want" ]; then printf "FAIL (wanted %s, got %s): %s\\n%s\\n" "$want" "$got" "$3" "$2"; exit 1; fi',
             '  printf "ok %s  %s\\n" "$want" "$3"', "}"]
    count = 0
    for block in blocks:
        for line in rewrite(block, base_url, binary, ports).splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = re.match(r"^(.*?)\s+#\s*(\d{3})\s*$", line)
            if match:
                command, status = match.groups()
                lines.append(f"__out=$({command})")
                lines.append(f"check {status} \"$__out\" {quote(command)}")
            else:
                lines.append(line)
                lines.append(f"printf 'ok      %s\\n' {quote(line)}")
            count += 1
    return "\n".join(lines) + "\n", count


def quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def main():
    binary = os.path.abspath(sys.argv[1])
    with open(os.path.join(ROOT, "README.md")) as readme:
        blocks = sh_blocks(readme.read())
    faults = convention_faults(blocks)
    if faults:
        print("README examples break the BASE convention:\n  " + "\n  ".join(faults))
        return 1
    server, base_url = start_server(binary)
    try:
        script, count = to_bash(blocks, base_url, binary)
        if count == 0:
            print("README has no ```sh examples")
            return 1
        with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as file:
            file.write(script)
        with tempfile.TemporaryDirectory() as scratch:  # examples may write files
            result = subprocess.run(["bash", file.name], cwd=scratch)
        os.unlink(file.name)
        print(f"README examples: {count} commands, {'all passed' if result.returncode == 0 else 'FAILED'}")
        return result.returncode
    finally:
        stop_server(server)


if __name__ == "__main__":
    sys.exit(main())
