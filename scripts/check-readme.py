#!/usr/bin/env python3
"""Runs every example of the README's walkthrough against a live server.

Usage: check-readme.py PATH/TO/topchrome

Every ```sh block of README.md is run, in order, in one bash, against a fresh
server on a free port (the README's 127.0.0.1:8080 is rewritten to it). A
command ending in `# NNN` must print an HTTP status line with NNN (the README
uses `curl -i` for those); every other command must exit 0. So the README
cannot drift from what the server does.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh_blocks(markdown):
    return re.findall(r"^```sh\n(.*?)^```", markdown, flags=re.S | re.M)


def to_bash(blocks, base_url):
    lines = ["set -euo pipefail", "check() {",
             '  local want=$1 got; got=$(printf "%s" "$2" | sed -n "s/^HTTP\\/1.1 \\([0-9]*\\).*/\\1/p" | tail -n1)',
             '  if [ "$got" != "$want" ]; then printf "FAIL (wanted %s, got %s): %s\\n%s\\n" "$want" "$got" "$3" "$2"; exit 1; fi',
             '  printf "ok %s  %s\\n" "$want" "$3"', "}"]
    count = 0
    for block in blocks:
        for line in block.replace("http://127.0.0.1:8080", base_url).splitlines():
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
    binary = sys.argv[1]
    with open(os.path.join(ROOT, "README.md")) as readme:
        blocks = sh_blocks(readme.read())
    server = subprocess.Popen([binary, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            print(f"server did not start: {line!r}")
            return 1
        script, count = to_bash(blocks, match.group(1))
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
        server.terminate()
        server.wait(timeout=15)


if __name__ == "__main__":
    sys.exit(main())
