#!/usr/bin/env bash
# End-to-end test of the container image: builds it with podman, checks what
# it holds (at most MAX_IMAGE_MB, no shell, no package manager), runs it
# read-only with every capability dropped and a port published on
# 127.0.0.1, drives the API with curl from outside, checks the health check,
# the user (the image's, and an arbitrary one), and a graceful `podman stop`;
# prints a summary. Exits non-zero if any check fails.
#
# No registry is reachable on the project's machines, so the two base images
# are local stand-ins, built once and kept in podman's storage for later runs
# (Tests/scripts/container-base.sh says which; SWIFT_IMAGE and DEBIAN_IMAGE name
# existing images instead, e.g. the official ones where a registry is
# reachable). The image's run stage is `scratch`.
#
# Needs root (rootful podman; debootstrap). Installs podman, runc, debootstrap,
# curl and jq with apt-get when missing. Other settings:
#   TOPCHROME_TEST_PORT   host port on 127.0.0.1 (default: a free one)
#   STOP_LIMIT            seconds `podman stop` may take at most (default 5)
#   MAX_IMAGE_MB          the image's size at most, in MB (default 40)
#   TOPCHROME_TEST_IMAGE  tag to build (default localhost/topchrome:container-test)
#   DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR   for debootstrap and the stand-in's
#                         apt sources (default: the first bookworm and
#                         bookworm-security mirrors of this machine's own apt
#                         sources, /etc/apt/sources.list and sources.list.d)
#
# `container-test.sh --self-test` only checks how mirrors are read from apt
# sources (sample files in a temp folder; no root, no podman; a second).
#
# Takes ≈ 1 min with the base images cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=Tests/scripts/container-base.sh
. Tests/scripts/container-base.sh

# apt_mirror on sample apt sources in a temp folder.
self_test() {
  local dir failed=0
  dir=$(mktemp -d)
  # expect DESCRIPTION SUITE WANTED: apt_mirror's answer for $dir/etc ("" = fails).
  expect() {
    local got status=0
    got=$(apt_mirror "$2" "$dir/etc") || status=$?
    if [ "$got" = "$3" ] && { [ -n "$3" ] || [ "$status" -ne 0 ]; }; then
      printf '  ok    %s\n' "$1"
    else
      printf '  FAIL  %s: got "%s" (status %s), wanted "%s"\n' "$1" "$got" "$status" "$3" >&2
      failed=1
    fi
  }
  fresh() { rm -rf "$dir/etc"; mkdir -p "$dir/etc/sources.list.d"; }

  fresh
  cat >"$dir/etc/sources.list" <<'LIST'
# deb http://commented.example/debian bookworm main
deb-src http://source.example/debian bookworm main
deb http://updates.example/debian bookworm-updates main
deb http://contrib.example/debian bookworm contrib non-free
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://one.example/debian/ bookworm main contrib
deb http://two.example/debian bookworm main
  deb [ arch=amd64 ] http://security.example/debian-security bookworm-security main # trailing
LIST
  expect "one-line: first deb line for bookworm main over http, options skipped, no trailing slash" \
    bookworm http://one.example/debian
  expect "one-line: options with spaces, comment at the end" bookworm-security http://security.example/debian-security

  fresh
  cat >"$dir/etc/sources.list.d/debian.sources" <<'SOURCES'
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

# the mirror
Types: deb-src deb
URIs: cdrom:/media
  https://mirror.example/debian/ http://second.example/debian
Suites: bookworm bookworm-updates
components: contrib main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main
SOURCES
  expect "deb822: disabled stanza skipped, first http(s) URI, continuation lines, any case of field names" \
    bookworm https://mirror.example/debian
  expect "deb822: the last stanza of a file" bookworm-security http://security.example/debian-security

  fresh
  printf 'Types: deb\nURIs: http://later.example/debian\nSuites: bookworm\nComponents: main\n' >"$dir/etc/sources.list.d/z.sources"
  printf 'deb http://list-d.example/debian bookworm main\n' >"$dir/etc/sources.list.d/b.list"
  printf 'deb http://disabled-file.example/debian bookworm main\n' >"$dir/etc/sources.list.d/a.list.disabled"
  expect "sources.list.d in name order, other extensions ignored" bookworm http://list-d.example/debian
  printf 'deb http://main-file.example/debian bookworm main\n' >"$dir/etc/sources.list"
  expect "sources.list before sources.list.d" bookworm http://main-file.example/debian

  fresh
  printf 'deb http://contrib.example/debian bookworm contrib\n' >"$dir/etc/sources.list"
  printf 'Types: deb\nURIs: http://trixie.example/debian\nSuites: trixie\nComponents: main\n' >"$dir/etc/sources.list.d/t.sources"
  expect "no bookworm main anywhere: fails" bookworm ""
  rm -rf "$dir/etc"
  expect "no apt sources at all: fails" bookworm ""

  rm -rf "$dir"
  [ "$failed" -eq 0 ] || { echo "mirror self-test: FAILED" >&2; return 1; }
  echo "mirror self-test: passed"
}

if [ "${1:-}" = --self-test ]; then self_test; exit; fi

IMAGE=${TOPCHROME_TEST_IMAGE:-localhost/topchrome:container-test}
CONTAINER=topchrome-container-test-$$
STOP_LIMIT=${STOP_LIMIT:-5}
MAX_IMAGE_MB=${MAX_IMAGE_MB:-40}
# As a hardened deployment runs it: nothing written but through volumes,
# no capability, no way to gain privileges.
HARDENED=(--read-only --cap-drop ALL --security-opt no-new-privileges)
watcher=""
fails() { ! "$@"; }

exec 3>&1 4>&2  # the terminal, for cleanup: a trap can fire inside a redirection
cleanup() {
  local status=$?
  exec 1>&3 2>&4
  [ -z "$building" ] || remove_build_leftovers
  [ -z "$watcher" ] || kill "$watcher" 2>/dev/null || true
  if "${PODMAN[@]}" container exists "$CONTAINER" 2>/dev/null; then
    if [ "$failures" -gt 0 ] || [ "$status" -ne 0 ]; then
      echo "--- container log ---"; "${PODMAN[@]}" logs "$CONTAINER" 2>&1 | tail -n 40 || true
    fi
    "${PODMAN[@]}" rm --force --time 0 "$CONTAINER" >/dev/null 2>&1 || true
  fi
  "${PODMAN[@]}" rm --force --time 0 "$CONTAINER-uid" >/dev/null 2>&1 || true
  [ -z "$scratch" ] || rm -rf "$scratch"
  print_summary "container test" "$status" || status=$?
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools --------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (rootful podman, debootstrap): sudo env \"PATH=\$PATH\" $0"

# Minimal set, no recommends: podman pulls conmon, containernetworking-plugins
# and iptables (the bridge network and port publishing); vfs storage needs no
# fuse-overlayfs, and rootful podman needs neither uidmap nor slirp4netns.
install_missing podman runc debootstrap curl jq
scratch=$(mktemp -d /var/tmp/topchrome-container-test.XXXXXX)

# --- base images --------------------------------------------------------------
base_images

# --- the image ----------------------------------------------------------------
build_project_image "$IMAGE"
figures+=("build time     $build_seconds s (project image; base images above)")

healthcheck=$("${PODMAN[@]}" image inspect --format '{{json .HealthCheck}}' "$IMAGE" 2>/dev/null || true)
check "image declares HEALTHCHECK topchrome healthcheck" \
  grep -q '"/usr/local/bin/topchrome","healthcheck"' <<<"$healthcheck"
check "image user is 10001:10001" \
  test "$("${PODMAN[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")" = "10001:10001"

size_bytes=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
figures+=("$(awk -v s="$size_bytes" 'BEGIN { printf "image size     %.1f MB (%d bytes)", s/1e6, s }')")
check "image size $((size_bytes / 1000000)) MB <= $MAX_IMAGE_MB MB" test "$size_bytes" -le $((MAX_IMAGE_MB * 1000000))

# What an intruder would find: no shell, no package manager, no tools.
root=$("${PODMAN[@]}" image mount "$IMAGE") || die "podman image mount $IMAGE"
check "no shell in the image (/bin/sh, /bin/bash, /usr/bin/sh)" \
  test ! -e "$root/bin/sh" -a ! -e "$root/bin/bash" -a ! -e "$root/usr/bin/sh" -a ! -L "$root/bin/sh"
check "no package manager (dpkg, apt, apt-get)" \
  test ! -e "$root/usr/bin/dpkg" -a ! -e "$root/usr/bin/apt" -a ! -e "$root/usr/bin/apt-get" -a ! -d "$root/var/lib/dpkg"
executables=$(find "$root" -type f -perm -u+x ! -name '*.so*' -printf '/%P\n' | sort | tr '\n' ' ')
check "one program: the server (executables: $executables)" test "$executables" = "/usr/local/bin/topchrome "
check "CA certificates where OpenSSL looks" test -s "$root/usr/lib/ssl/cert.pem"
check "passwd names the service user" grep -q '^topchrome:x:10001:10001:' "$root/etc/passwd"
binary_bytes=$(stat -c %s "$root/usr/local/bin/topchrome" 2>/dev/null || echo 0)
figures+=("$(awk -v s="$binary_bytes" 'BEGIN { printf "binary size    %.1f MB (stripped, static Swift stdlib)", s/1e6 }')")
figures+=("$(du -sb "$root/lib" "$root/lib64" "$root/usr/lib" 2>/dev/null | awk '{ s += $1 } END {
  printf "libraries      %.1f MB (shared libraries and the loader)", s/1e6 }')")
"${PODMAN[@]}" image unmount "$IMAGE" >/dev/null 2>&1 || true
check "no shell to run: podman run --entrypoint /bin/sh fails" \
  fails "${PODMAN[@]}" run --rm "${RUN_LIMITS[@]}" --entrypoint /bin/sh "$IMAGE" -c true

# --- run ----------------------------------------------------------------------
say "running $CONTAINER"
publish="127.0.0.1:${TOPCHROME_TEST_PORT:-}:8080"
"${PODMAN[@]}" run --detach --name "$CONTAINER" "${RUN_LIMITS[@]}" "${HARDENED[@]}" --publish "$publish" "$IMAGE" \
  >/dev/null || die "podman run"
port=$("${PODMAN[@]}" port "$CONTAINER" 8080/tcp | sed -nE 's/^127\.0\.0\.1:([0-9]+)$/\1/p' | head -n 1)
[ -n "$port" ] || die "port 8080 published on 127.0.0.1"
base=http://127.0.0.1:$port
pass "published on $base"

ready=""
for _ in $(seq 1 100); do
  if curl -fsS -o /dev/null --max-time 1 "$base/readyz" 2>/dev/null; then ready=yes; break; fi
  [ "$("${PODMAN[@]}" inspect --format '{{.State.Running}}' "$CONTAINER")" = true ] || break
  sleep 0.1
done
[ -n "$ready" ] || die "server ready on $base/readyz within 10 s"
pass "server ready"

# --- the API from outside -----------------------------------------------------
# request METHOD PATH [JSON]: sets $status, $body and $headers.
request() {
  local args=(-sS --max-time 5 -X "$1" -D "$scratch/headers" -o "$scratch/body" -w '%{http_code}')
  rm -f "$scratch/headers" "$scratch/body"
  [ $# -lt 3 ] || args+=(-H 'Content-Type: application/json' --data "$3")
  status=$(curl "${args[@]}" "$base$2") || status=000
  body=$(cat "$scratch/body" 2>/dev/null || true)
  headers=$(tr -d '\r' <"$scratch/headers" 2>/dev/null || true)
}
# expect STATUS JQ-FILTER: the last answer had that status and the filter
# holds for its JSON body. has_header REGEX: a header line matches (any case).
expect() { [ "$status" = "$1" ] && jq -e "$2" >/dev/null 2>&1 <<<"$body"; }
has_header() { grep -qi "$1" <<<"$headers"; }

request GET /healthz
check "GET /healthz -> 200" test "$status" = 200

request POST /v1/sessions '{"inset": 59}'
check "POST /v1/sessions -> 201 (got $status)" test "$status" = 201
id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
check "new session: 32-hex id, inset 59, revealed, version 1 ($body)" \
  expect 201 '(.id | test("^[0-9a-f]{32}$")) and .inset == 59 and .isRevealed == true and .version == 1'
check "new session: Location /v1/sessions/{id}" has_header "^location: \(http://[^/]*\)\?/v1/sessions/$id\$"
check "new session: ETag \"1.<tag>\"" has_header '^etag: "1\.[0-9a-f]\{12\}"$'
[ -n "$id" ] || die "no session id to go on with"

request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 240, "contentInsetTop": 59}'
check "scroll far down -> 200, island hidden, version 2 ($body)" \
  expect 200 '.isRevealed == false and .version == 2 and .inset == 59'

request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 0, "axis": "horizontal"}'
check "horizontal report -> 200, changes nothing ($body)" expect 200 '.isRevealed == false and .version == 2'

request GET "/v1/sessions/$id"
check "GET session -> 200 with the same state ($body)" \
  expect 200 ".id == \"$id\" and .inset == 59 and .isRevealed == false and .version == 2"
check "GET session: ETag \"2.<tag>\"" has_header '^etag: "2\.[0-9a-f]\{12\}"$'

request POST "/v1/sessions/$id/scroll" '[{"contentOffsetY": -59, "contentInsetTop": 59, "seq": 1}]'
check "batch back to the top -> 200, revealed, version 3 ($body)" expect 200 '.isRevealed == true and .version == 3'

request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": "far"}'
check "bad report -> 400 ($status)" test "$status" = 400
check "bad report: application/problem+json" has_header '^content-type: application/problem+json'

request DELETE "/v1/sessions/$id"
check "DELETE session -> 204" test "$status" = 204
request GET "/v1/sessions/$id"
check "deleted session -> 404" test "$status" = 404

# --- health, user -------------------------------------------------------------
check "podman healthcheck run: healthy" "${PODMAN[@]}" healthcheck run "$CONTAINER"
health=$("${PODMAN[@]}" inspect --format '{{.State.Health.Status}}' "$CONTAINER" 2>/dev/null || true)
check "health status healthy (inspect: $health)" test "$health" = healthy
# The check can fail too: pointed at a port where nothing listens it exits 1.
check "health check fails when nothing answers" \
  fails "${PODMAN[@]}" exec --env TOPCHROME_PORT=1 "$CONTAINER" /usr/local/bin/topchrome healthcheck

pid=$("${PODMAN[@]}" inspect --format '{{.State.Pid}}' "$CONTAINER")
uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
gids=$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$pid/status")
check "server runs as uid 10001 (real, effective, saved, fs: $uids)" test "$uids" = "10001 10001 10001 10001"
check "server runs as gid 10001 ($gids)" test "$gids" = "10001 10001 10001 10001"
inner_pid=$(awk '/^NSpid:/ { print $NF }' "/proc/$pid/status")
command_name=$(cat "/proc/$pid/comm")
check "server is PID 1 in the container ($command_name, PID $inner_pid)" \
  test "$inner_pid/$command_name" = 1/topchrome
capabilities=$(awk '/^Cap(Inh|Prm|Eff|Bnd|Amb):/ { printf "%s%s", sep, $2; sep = " " }' "/proc/$pid/status")
check "no capability at all (inheritable, permitted, effective, bounding, ambient: $capabilities)" \
  test "$capabilities" = "0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000"
check "root file system read-only" \
  test "$("${PODMAN[@]}" inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$CONTAINER")" = true

# Any uid, as platforms that assign one (OpenShift) run it: no passwd entry,
# no home, nothing of its own to write.
say "running $CONTAINER-uid as uid 4242"
"${PODMAN[@]}" run --detach --name "$CONTAINER-uid" "${RUN_LIMITS[@]}" "${HARDENED[@]}" --user 4242:4242 "$IMAGE" \
  >/dev/null || die "podman run --user 4242:4242"
other_healthy() { "${PODMAN[@]}" exec "$CONTAINER-uid" /usr/local/bin/topchrome healthcheck >/dev/null 2>&1; }
for _ in $(seq 1 100); do other_healthy && break; sleep 0.1; done
check "as uid 4242: serves (its health check passes)" other_healthy
other_pid=$("${PODMAN[@]}" inspect --format '{{.State.Pid}}' "$CONTAINER-uid")
other_uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$other_pid/status")
check "as uid 4242: runs as 4242 ($other_uids)" test "$other_uids" = "4242 4242 4242 4242"
"${PODMAN[@]}" rm --force --time 0 "$CONTAINER-uid" >/dev/null 2>&1 || true

# --- graceful stop ------------------------------------------------------------
# With an event stream open: the server must end it, not wait for it.
request POST /v1/sessions
watch_id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
curl -sN --max-time 60 "$base/v1/sessions/$watch_id/events" >"$scratch/events" 2>/dev/null &
watcher=$!
for _ in $(seq 1 50); do grep -q '^event: state' "$scratch/events" 2>/dev/null && break; sleep 0.1; done
check "event stream open during the stop" grep -q '^event: state' "$scratch/events"

say "podman stop (SIGTERM, then SIGKILL after 10 s)"
t=$EPOCHREALTIME
"${PODMAN[@]}" stop "$CONTAINER" >/dev/null || fail "podman stop"
stop_seconds=$(seconds_since "$t")
figures+=("stop time      $stop_seconds s (podman stop, default 10 s timeout)")
exit_code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$CONTAINER")
check "exit code 0 after SIGTERM (got $exit_code)" test "$exit_code" = 0
check "stopped in $stop_seconds s (limit $STOP_LIMIT s)" \
  awk -v s="$stop_seconds" -v l="$STOP_LIMIT" 'BEGIN { exit !(s < l) }'
logs=$("${PODMAN[@]}" logs "$CONTAINER" 2>&1 || true)
# Plain or structured log lines alike: "topchrome stopping (signal 15)",
# "... topchrome stopping signal=15 ...", {"msg":"topchrome stopping","signal":15}.
check "log: stopping on SIGTERM" grep -Eq 'topchrome stopping.*signal[^0-9]{0,3}15([^0-9]|$)' <<<"$logs"
check "log: stopped with every request finished" grep -Eq 'topchrome stopped("|$)' <<<"$logs"

wait "$watcher" 2>/dev/null || true
watcher=""

"${PODMAN[@]}" rm "$CONTAINER" >/dev/null && pass "container removed (images kept)"
