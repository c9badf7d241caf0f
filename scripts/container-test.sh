#!/usr/bin/env bash
# End-to-end test of the container image: builds it with podman, runs it with
# a port published on 127.0.0.1, drives the API with curl from outside, checks
# the health check, the user, and a graceful `podman stop`; prints a summary.
# Exits non-zero if any check fails.
#
# No registry is reachable on the project's machines, so the two base images
# are local stand-ins, built once and kept in podman's storage for later runs:
#   localhost/bookworm-min          Debian bookworm minbase (debootstrap),
#                                   trimmed like debian:bookworm-slim
#   localhost/swift-hostmount:...   that plus the Swift toolchain's run-time
#                                   packages; the host's toolchain is mounted
#                                   read-only into the build, not copied
# Set SWIFT_IMAGE and RUNTIME_IMAGE to use existing images instead (e.g. the
# official swift:6.3-bookworm and debian:bookworm-slim where a registry is
# reachable); the toolchain is then not mounted.
#
# Needs root (rootful podman; debootstrap). Installs podman, runc, debootstrap,
# curl and jq with apt-get when missing. Other settings:
#   TOPCHROME_TEST_PORT   host port on 127.0.0.1 (default: a free one)
#   STOP_LIMIT            seconds `podman stop` may take at most (default 5)
#   TOPCHROME_TEST_IMAGE  tag to build (default localhost/topchrome:container-test)
#   DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR   for debootstrap and the stand-in's
#                         apt sources (default: the first bookworm and
#                         bookworm-security mirrors of this machine's own apt
#                         sources, /etc/apt/sources.list and sources.list.d)
#
# `container-test.sh --self-test` only checks how mirrors are read from apt
# sources (sample files in a temp folder; no root, no podman; a second).
set -euo pipefail
cd "$(dirname "$0")/.."

# apt_mirror SUITE [APT_DIR]: the first http(s) URI that the apt sources in
# APT_DIR (default /etc/apt) list for SUITE with component main, as apt reads
# them: sources.list, then sources.list.d/*.list (one-line format) and
# *.sources (deb822) in name order. Prints nothing and fails if none does.
apt_mirror() {
  local suite=$1 dir=${2:-/etc/apt} file
  local files=()
  [ ! -f "$dir/sources.list" ] || files+=("$dir/sources.list")
  for file in "$dir"/sources.list.d/*; do
    case $file in *.list | *.sources) [ ! -f "$file" ] || files+=("$file") ;; esac
  done
  [ ${#files[@]} -gt 0 ] || return 1
  awk -v suite="$suite" '
    function has(list, word,   parts, n, i) {
      n = split(list, parts, /[ \t]+/)
      for (i = 1; i <= n; i++) if (parts[i] == word) return 1
      return 0
    }
    function emit(uri) { sub(/\/+$/, "", uri); print uri; found = 1; exit }
    # deb822: a stanza ends; its first http(s) URI, if it fits.
    function stanza(   parts, n, i) {
      if (has(field["types"], "deb") && has(field["suites"], suite) && has(field["components"], "main") \
          && tolower(field["enabled"]) !~ /^[ \t]*no[ \t]*$/) {
        n = split(field["uris"], parts, /[ \t]+/)
        for (i = 1; i <= n; i++) if (parts[i] ~ /^https?:\/\//) emit(parts[i])
      }
      split("", field); key = ""
    }
    FNR == 1 { if (deb822) stanza(); deb822 = FILENAME ~ /\.sources$/ }
    deb822 && /^[ \t]*#/ { next }
    deb822 && /^[ \t]*$/ { stanza(); next }
    deb822 && /^[ \t]/ { if (key != "") field[key] = field[key] " " $0; next }
    deb822 {
      colon = index($0, ":"); if (colon == 0) next
      key = tolower(substr($0, 1, colon - 1)); field[key] = substr($0, colon + 1); next
    }
    # One-line format: deb [options] uri suite component...
    {
      sub(/#.*/, ""); if ($1 != "deb") next
      i = 2
      if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      if ($(i + 1) != suite || $i !~ /^https?:\/\//) next
      for (j = i + 2; j <= NF; j++) if ($j == "main") emit($i)
    }
    END { if (!found && deb822) stanza(); exit !found }
  ' "${files[@]}"
}

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
# What works on rootful podman here without systemd, overlayfs or crun: vfs
# storage, cgroupfs, runc. runc also needs explicit rlimits on `run` (without
# them it fails "error setting rlimit type 7").
PODMAN=(podman --storage-driver vfs --cgroup-manager=cgroupfs --runtime runc)
RUN_LIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# Podman schedules health checks with systemd timers; without systemd it logs
# errors on run, stop and rm. The test runs the check itself instead.
[ -d /run/systemd/system ] || export DISABLE_HC_SYSTEMD=true

failures=0
scratch=""
started=$EPOCHREALTIME
declare -a summary=() figures=()

say() { printf '==> %s\n' "$*"; }
pass() { printf '  ok    %s\n' "$*"; summary+=("ok    $*"); }
fail() { printf '  FAIL  %s\n' "$*" >&2; summary+=("FAIL  $*"); failures=$((failures + 1)); }
die() { fail "$*"; exit 1; }
# check DESCRIPTION COMMAND...: records ok or FAIL by the command's status.
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# podman_build ARGS...: `podman build`; if it fails or is interrupted, removes
# the builder containers it left behind (an interrupted build leaves one, a
# full copy of its base image on vfs): those not there before it started.
building=""
watcher=""
podman_build() {
  local status=0
  before_build=$("${PODMAN[@]}" ps --all --external --quiet --no-trunc | sort)
  building=yes
  # --layers=false: vfs copies the whole file system at every cached layer.
  # --format docker: the OCI format has no HEALTHCHECK; podman would drop it.
  # --pull=never: no registry is reachable; the base images are local.
  "${PODMAN[@]}" build --layers=false --force-rm --pull=never --format docker "$@" || status=$?
  [ "$status" -eq 0 ] || remove_build_leftovers
  building=""
  return "$status"
}
remove_build_leftovers() {
  comm -13 <(printf '%s\n' "$before_build") \
    <("${PODMAN[@]}" ps --all --external --quiet --no-trunc | sort) |
    while read -r leftover; do "${PODMAN[@]}" rm --force "$leftover" >/dev/null 2>&1 || true; done
}

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
  [ -z "$scratch" ] || rm -rf "$scratch"
  echo
  echo "=== container test summary ==="
  printf '%s\n' "${summary[@]}"
  printf '%s\n' "${figures[@]}"
  printf 'total          %s s\n' "$(seconds_since "$started")"
  if [ "$failures" -gt 0 ] || [ "$status" -ne 0 ]; then
    if [ "$failures" -gt 0 ]; then echo "RESULT: FAILED ($failures failed check(s))"
    else echo "RESULT: FAILED (stopped early, exit status $status)"; fi
    [ "$status" -ne 0 ] || status=1
  else
    echo "RESULT: PASSED"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools --------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (rootful podman, debootstrap): sudo env \"PATH=\$PATH\" $0"

# Minimal set, no recommends: podman pulls conmon, containernetworking-plugins
# and iptables (the bridge network and port publishing); vfs storage needs no
# fuse-overlayfs, and rootful podman needs neither uidmap nor slirp4netns.
need_apt=()
for package in podman runc debootstrap curl jq; do
  dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
scratch=$(mktemp -d /var/tmp/topchrome-container-test.XXXXXX)

# --- base images --------------------------------------------------------------
RUNTIME_IMAGE=${RUNTIME_IMAGE:-}
SWIFT_IMAGE=${SWIFT_IMAGE:-}
mount_toolchain=()

if [ -z "$RUNTIME_IMAGE" ]; then
  RUNTIME_IMAGE=localhost/bookworm-min
  if "${PODMAN[@]}" image exists "$RUNTIME_IMAGE"; then
    pass "runtime stand-in $RUNTIME_IMAGE (cached)"
  else
    if [ -z "${DEBIAN_MIRROR:-}" ]; then
      DEBIAN_MIRROR=$(apt_mirror bookworm) || die "no Debian bookworm mirror in this machine's apt sources \
(a deb line or .sources stanza for suite bookworm, component main, over http or https, in /etc/apt/sources.list \
or /etc/apt/sources.list.d): set DEBIAN_MIRROR, e.g. DEBIAN_MIRROR=http://<mirror>/debian"
    fi
    DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-$(apt_mirror bookworm-security || true)}
    say "building $RUNTIME_IMAGE with debootstrap from $DEBIAN_MIRROR (about a minute)"
    t=$EPOCHREALTIME
    rootfs=$scratch/rootfs
    debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$scratch/debootstrap.log" 2>&1 \
      || { tail -n 20 "$scratch/debootstrap.log" >&2; die "debootstrap bookworm"; }
    # As debian:bookworm-slim: no package lists or caches, no docs, man pages
    # or translations (and dpkg keeps them out later), the same apt sources.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
      "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log \
      "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/groff/*
    find "$rootfs"/usr/share/doc -mindepth 1 -not -name copyright -not -type d -delete
    find "$rootfs"/usr/share/locale -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
    cat >"$rootfs"/etc/dpkg/dpkg.cfg.d/slim <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
    # debian:bookworm-slim's apt settings: no package caches or translations.
    cat >"$rootfs"/etc/apt/apt.conf.d/docker-clean <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'Acquire::Languages "none";' >"$rootfs"/etc/apt/apt.conf.d/docker-no-languages
    echo 'Acquire::GzipIndexes "true";' >"$rootfs"/etc/apt/apt.conf.d/docker-gzip-indexes
    rm -f "$rootfs"/etc/apt/sources.list
    cat >"$rootfs"/etc/apt/sources.list.d/debian.sources <<EOF
Types: deb
URIs: $DEBIAN_MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # Without a security mirror (none in this machine's sources, none set)
    # the stand-in goes without, like the machine.
    if [ -n "$DEBIAN_SECURITY_MIRROR" ]; then
      cat >>"$rootfs"/etc/apt/sources.list.d/debian.sources <<EOF

Types: deb
URIs: $DEBIAN_SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    tar --numeric-owner -C "$rootfs" -c . | "${PODMAN[@]}" import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "$RUNTIME_IMAGE" >"$scratch/import.log" 2>&1 \
      || { cat "$scratch/import.log" >&2; die "podman import $RUNTIME_IMAGE"; }
    rm -rf "$rootfs"
    pass "runtime stand-in $RUNTIME_IMAGE built in $(seconds_since "$t") s"
  fi
fi

if [ -z "$SWIFT_IMAGE" ]; then
  command -v swift >/dev/null || die "swift is not on PATH: the build stand-in mounts the host's toolchain"
  # The folder holding usr/bin/swift.
  SWIFT_ROOT=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
  swift_version=$(swift --version 2>/dev/null | sed -nE 's/.*Swift version ([0-9.]+).*/\1/p' | head -n 1)
  SWIFT_IMAGE=localhost/swift-hostmount:${swift_version:-unknown}-bookworm
  mount_toolchain=(--volume "$SWIFT_ROOT:$SWIFT_ROOT:ro")
  cached_root=$("${PODMAN[@]}" image inspect --format '{{index .Labels "swift-root"}}' "$SWIFT_IMAGE" 2>/dev/null || true)
  if [ "$cached_root" = "$SWIFT_ROOT" ]; then
    pass "build stand-in $SWIFT_IMAGE (cached; toolchain $SWIFT_ROOT)"
  else
    say "building $SWIFT_IMAGE (toolchain mounted from $SWIFT_ROOT)"
    t=$EPOCHREALTIME
    mkdir "$scratch/swift"
    # The run-time packages of the Swift toolchain for Debian 12 (what the
    # official image installs), plus libmicrohttpd-dev and pkg-config.
    cat >"$scratch/swift/Containerfile" <<EOF
FROM $RUNTIME_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      binutils gcc libc6-dev libstdc++-12-dev libgcc-12-dev libcurl4 libxml2 \\
      libedit2 libsqlite3-0 libncurses6 zlib1g-dev tzdata git pkg-config \\
      libmicrohttpd-dev \\
 && rm -rf /var/lib/apt/lists/*
ENV PATH=$SWIFT_ROOT/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL swift-root="$SWIFT_ROOT"
EOF
    podman_build --tag "$SWIFT_IMAGE" "$scratch/swift" >"$scratch/swift-build.log" 2>&1 \
      || { tail -n 30 "$scratch/swift-build.log" >&2; die "build stand-in $SWIFT_IMAGE"; }
    pass "build stand-in $SWIFT_IMAGE built in $(seconds_since "$t") s"
  fi
fi

# --- the image ----------------------------------------------------------------
say "building $IMAGE (FROM $SWIFT_IMAGE, then $RUNTIME_IMAGE)"
previous=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
t=$EPOCHREALTIME
if ! podman_build "${mount_toolchain[@]}" \
    --build-arg "SWIFT_IMAGE=$SWIFT_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" \
    --tag "$IMAGE" . >"$scratch/build.log" 2>&1; then
  tail -n 40 "$scratch/build.log" >&2
  die "podman build"
fi
build_seconds=$(seconds_since "$t")
pass "image $IMAGE built in $build_seconds s"
figures+=("build time     $build_seconds s (project image; base images above)")
current=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$IMAGE")
# Drop the image this build replaced (vfs keeps each one as a full copy).
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
  "${PODMAN[@]}" image rm "$previous" >/dev/null 2>&1 || true
fi

healthcheck=$("${PODMAN[@]}" image inspect --format '{{json .HealthCheck}}' "$IMAGE" 2>/dev/null || true)
check "image declares HEALTHCHECK topchrome healthcheck" \
  grep -q '"/usr/local/bin/topchrome","healthcheck"' <<<"$healthcheck"
check "image user is 10001:10001" \
  test "$("${PODMAN[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")" = "10001:10001"

size_bytes=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
base_bytes=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$RUNTIME_IMAGE")
figures+=("$(awk -v s="$size_bytes" -v b="$base_bytes" 'BEGIN {
  printf "image size     %.1f MB (%d bytes); %.1f MB over the %.1f MB base", s/1e6, s, (s-b)/1e6, b/1e6 }')")
if root=$("${PODMAN[@]}" image mount "$IMAGE" 2>/dev/null); then
  binary_bytes=$(stat -c %s "$root/usr/local/bin/topchrome" 2>/dev/null || echo 0)
  "${PODMAN[@]}" image unmount "$IMAGE" >/dev/null 2>&1 || true
  figures+=("$(awk -v s="$binary_bytes" 'BEGIN { printf "binary size    %.1f MB (stripped, static Swift stdlib)", s/1e6 }')")
fi

# --- run ----------------------------------------------------------------------
say "running $CONTAINER"
publish="127.0.0.1:${TOPCHROME_TEST_PORT:-}:8080"
"${PODMAN[@]}" run --detach --name "$CONTAINER" "${RUN_LIMITS[@]}" --publish "$publish" "$IMAGE" >/dev/null \
  || die "podman run"
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
fails() { ! "$@"; }

request GET /healthz
check "GET /healthz -> 200" test "$status" = 200

request POST /v1/sessions '{"inset": 59}'
check "POST /v1/sessions -> 201 (got $status)" test "$status" = 201
id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
check "new session: 32-hex id, inset 59, revealed, version 1 ($body)" \
  expect 201 '(.id | test("^[0-9a-f]{32}$")) and .inset == 59 and .isRevealed == true and .version == 1'
check "new session: Location /v1/sessions/{id}" has_header "^location: \(http://[^/]*\)\?/v1/sessions/$id\$"
check "new session: ETag \"1\"" has_header '^etag: "1"$'
[ -n "$id" ] || die "no session id to go on with"

request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 240, "contentInsetTop": 59}'
check "scroll far down -> 200, island hidden, version 2 ($body)" \
  expect 200 '.isRevealed == false and .version == 2 and .inset == 59'

request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 0, "axis": "horizontal"}'
check "horizontal report -> 200, changes nothing ($body)" expect 200 '.isRevealed == false and .version == 2'

request GET "/v1/sessions/$id"
check "GET session -> 200 with the same state ($body)" \
  expect 200 ".id == \"$id\" and .inset == 59 and .isRevealed == false and .version == 2"
check "GET session: ETag \"2\"" has_header '^etag: "2"$'

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
