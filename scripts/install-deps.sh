#!/usr/bin/env bash
# Installs what building and testing TopChrome needs on Debian 12 with Swift:
# libmicrohttpd (headers + library), pkg-config, curl, and the spec validator.
# Installs only what is missing, so a second run is quick.
set -euo pipefail

need_apt=()
for package in libmicrohttpd-dev pkg-config curl; do
  dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ "${1:-}" = "--test" ]; then
  python3 -c 'import openapi_spec_validator' 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check openapi-spec-validator
fi

command -v swift >/dev/null || { echo "swift is not on PATH: install Swift 6 (swift.org) first" >&2; exit 1; }
