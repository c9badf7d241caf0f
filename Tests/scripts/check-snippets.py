#!/usr/bin/env python3
"""Compiles every Swift snippet of README.md, docs/app.md and docs/client.md, as an app would.

Usage: check-snippets.py

Each ```swift block becomes one file of a scratch package (.build/snippets)
that depends on this repository by path and imports its products, as an
app's package does: so a snippet is a file of a library, declarations only
(a function, a type), and names what it uses. Two kinds are not compiled
on Linux, each for a stated reason:
- a Package.swift fragment (`.package(`, `.product(`): it is not Swift a
  target compiles; its product names are checked against Package.swift;
- a snippet that imports SwiftUI or UIKit: Linux has neither. It is still
  written into the package inside `#if canImport(...)`, so the same check
  compiles it where they exist (on a Mac).
The scratch package keeps its build between runs: after the first (≈ 1 min,
the client and the core compiled once more, as a consumer compiles them),
a run compiles only the snippets (seconds).
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md", "docs/app.md", "docs/client.md"]
SCRATCH = os.path.join(ROOT, ".build", "snippets")
APPLE_ONLY = ("SwiftUI", "UIKit")


def snippets(page):
    """(line, text) of each ```swift block of the page."""
    lines = open(os.path.join(ROOT, page), encoding="utf-8").read().split("\n")
    found, block, start = [], None, 0
    for number, line in enumerate(lines, 1):
        if block is None and line.strip() == "```swift":
            block, start = [], number + 1
        elif block is not None and line.strip() == "```":
            found.append((start, "\n".join(block) + "\n"))
            block = None
        elif block is not None:
            block.append(line)
    return found


def products(manifest):
    return set(re.findall(r'\.library\(name: "([^"]+)"', manifest))


def main():
    manifest = open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read()
    offered = products(manifest)
    sources = os.path.join(SCRATCH, "Sources", "Snippets")
    os.makedirs(sources, exist_ok=True)
    for old in os.listdir(sources):
        os.remove(os.path.join(sources, old))
    failures, compiled, skipped = [], 0, []
    for page in PAGES:
        for line, text in snippets(page):
            where = f"{page}:{line}"
            if ".package(" in text or ".product(" in text:
                named = set(re.findall(r'\.product\(name: "([^"]+)"', text))
                if not named <= offered:
                    failures.append(f"{where}: names products {sorted(named - offered)} that Package.swift does not offer")
                skipped.append(f"{where}: a Package.swift fragment (product names checked)")
                continue
            name = re.sub(r"[^A-Za-z0-9]", "_", f"{page}_{line}") + ".swift"
            apple = [module for module in APPLE_ONLY if re.search(rf"^import {module}$", text, re.M)]
            body = f"// {where}\n" + text
            if apple:
                guard = " && ".join(f"canImport({module})" for module in apple)
                body = f"#if {guard}\n{body}#endif\n"
                skipped.append(f"{where}: imports {', '.join(apple)}, which Linux lacks (compiled where {guard})")
            else:
                compiled += 1
            with open(os.path.join(sources, name), "w", encoding="utf-8") as out:
                out.write(body)
    identity = os.path.basename(ROOT).lower()
    with open(os.path.join(SCRATCH, "Package.swift"), "w", encoding="utf-8") as out:
        out.write(f"""// swift-tools-version:6.0
// Written by Tests/scripts/check-snippets.py: the docs' snippets as an app's target.
import PackageDescription

let package = Package(
    name: "Snippets",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [.package(path: {json.dumps(ROOT)})],
    targets: [
        .target(name: "Snippets", dependencies: [
            .product(name: "TopChromeClient", package: {json.dumps(identity)}),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
""")
    for note in skipped:
        print(f"skipped {note}")
    if failures:
        print("\n".join(failures))
        return 1
    build = subprocess.run(["swift", "build", "--package-path", SCRATCH, "-Xswiftc", "-warnings-as-errors"],
                           capture_output=True, text=True)
    if build.returncode != 0:
        print(build.stdout[-6000:] + build.stderr[-3000:])
        print(f"FAIL: the snippets do not compile (files under {sources} name their page and line)")
        return 1
    print(f"OK: {compiled} snippets compiled, {len(skipped)} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
