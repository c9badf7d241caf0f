#!/usr/bin/env bash
# Installs what the browser check (Tests/scripts/check-demo.py) needs, only what is
# missing: Debian's chromium and chromium-driver, and selenium in the project's
# Python environment .build/python (made by scripts/install-deps.sh --test).
#
# Takes seconds when nothing is missing, a few minutes on a fresh machine.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "installing chromium chromium-driver"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
fi

"$root/scripts/install-deps.sh" --test
venv="$root/.build/python"
"$venv/bin/python" -c 'import selenium' 2>/dev/null \
  || "$venv/bin/python" -m pip install --quiet --disable-pip-version-check selenium
