#!/usr/bin/env bash
# Installs what building and testing TopChrome needs on Debian 12 with Swift:
# libmicrohttpd, GnuTLS (the server hands libmicrohttpd's TLS its
# certificate, so a reload can change it), hiredis, OpenSSL (TLS to Redis:
# hiredis 0.14 has none) and libcurl (headers + libraries; libcurl for the
# client library on Linux), pkg-config, curl; with
# --test also the Redis server, tools and sentinel the Redis tests start, what the
# deploy test runs its compose file with (podman-compose, and the CNI plugin
# by which containers find each other by name), and the Python tools the
# checks use.
# Installs only what is missing, so a second run is quick.
#
# Takes seconds when nothing is missing, a few minutes on a fresh machine.
set -euo pipefail

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need_apt=()
packages=(libmicrohttpd-dev libgnutls28-dev libhiredis-dev libssl-dev libcurl4-openssl-dev pkg-config curl openssl)
if [ "${1:-}" = "--test" ]; then
  packages+=(redis-server redis-tools redis-sentinel podman-compose golang-github-containernetworking-plugin-dnsname)
fi
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Python test tools live in their own virtual environment under .build:
# Debian's system Python refuses pip installs (PEP 668), and nothing leaks
# into the user's Python.
if [ "${1:-}" = "--test" ]; then
  venv="$(cd "$(dirname "$0")/.." && pwd)/.build/python"
  if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
      python3 -m venv "$venv"
    fi
  fi
  # PyJWT with cryptography: a well-known library's tokens, which the token tests must accept.
  # websockets: a conforming WebSocket peer for the socket's conformance set.
  "$venv/bin/python" -c 'import openapi_spec_validator, prometheus_client, schemathesis, jwt, cryptography, websockets' 2>/dev/null \
    || "$venv/bin/python" -m pip install --quiet --disable-pip-version-check openapi-spec-validator prometheus-client schemathesis \
      'pyjwt[crypto]' websockets
fi

command -v swift >/dev/null || { echo "swift is not on PATH: install Swift 6 (swift.org) first" >&2; exit 1; }
