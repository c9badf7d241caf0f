#!/usr/bin/env bash
# Sourced by the container and deploy tests (Tests/scripts/container-test.sh,
# Tests/scripts/deploy-test.sh): the podman flags that work on the project's
# machines, the ok/FAIL bookkeeping and summary, the Debian stand-ins for the
# base images (no registry is reachable there) and the build of the project's
# image. The sourcing script sets `scratch` (a temp folder) before building.
#
# Base images, built once and kept in podman's storage for later runs:
#   localhost/bookworm-min          Debian bookworm minbase (debootstrap),
#                                   trimmed like debian:bookworm-slim: the
#                                   base of the others and of the deploy
#                                   test's Redis and nginx stand-ins
#   localhost/swift-hostmount:...   that plus the Swift toolchain's run-time
#                                   packages; the host's toolchain is mounted
#                                   read-only into the build, not copied
# The project image's run stage starts from `scratch`, which needs none.
# Set SWIFT_IMAGE (and DEBIAN_IMAGE) to use existing images instead (e.g.
# the official swift:6.3-bookworm and debian:bookworm-slim where a registry
# is reachable); the toolchain is then not mounted. RUNTIME_IMAGE, when set,
# replaces the project image's run stage base (the Dockerfile's argument of
# that name). DEBIAN_MIRROR and
# DEBIAN_SECURITY_MIRROR set debootstrap's and the stand-in's apt sources
# (default: the first bookworm and bookworm-security mirrors of this
# machine's own apt sources, /etc/apt/sources.list and sources.list.d).
#
# Checks nothing itself; sourced.

# What works on rootful podman here without systemd, overlayfs or crun: vfs
# storage, cgroupfs, runc. runc also needs explicit rlimits on `run` (without
# them it fails "error setting rlimit type 7").
PODMAN=(podman --storage-driver vfs --cgroup-manager=cgroupfs --runtime runc)
RUN_LIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
# Podman schedules health checks with systemd timers; without systemd it logs
# errors on run, stop and rm. The tests run the check themselves instead.
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

# print_summary TITLE STATUS: the summary block; returns the exit status the
# test ends with (STATUS, or 1 if a check failed).
print_summary() {
  local status=$2
  echo
  echo "=== $1 summary ==="
  printf '%s\n' "${summary[@]}"
  [ ${#figures[@]} -eq 0 ] || printf '%s\n' "${figures[@]}"
  printf 'total          %s s\n' "$(seconds_since "$started")"
  if [ "$failures" -gt 0 ] || [ "$status" -ne 0 ]; then
    if [ "$failures" -gt 0 ]; then echo "RESULT: FAILED ($failures failed check(s))"
    else echo "RESULT: FAILED (stopped early, exit status $status)"; fi
    [ "$status" -ne 0 ] || status=1
  else
    echo "RESULT: PASSED"
  fi
  return "$status"
}

# install_missing PACKAGE...: apt-get installs those not installed, without
# recommends.
install_missing() {
  local package need_apt=()
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || need_apt+=("$package")
  done
  if [ ${#need_apt[@]} -gt 0 ]; then
    say "installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  fi
}

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

# podman_build ARGS...: `podman build`; if it fails or is interrupted, removes
# the builder containers it left behind (an interrupted build leaves one, a
# full copy of its base image on vfs): those not there before it started.
# The sourcing script's EXIT trap calls remove_build_leftovers while
# `building` is set.
building=""
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


# base_images: sets DEBIAN_IMAGE and SWIFT_IMAGE (building the stand-ins
# when missing) and mount_toolchain (the build's volume flags).
base_images() {
  local t rootfs swift_version cached_root
  DEBIAN_IMAGE=${DEBIAN_IMAGE:-}
  SWIFT_IMAGE=${SWIFT_IMAGE:-}
  mount_toolchain=()

  if [ -z "$DEBIAN_IMAGE" ]; then
    DEBIAN_IMAGE=localhost/bookworm-min
    if "${PODMAN[@]}" image exists "$DEBIAN_IMAGE"; then
      pass "Debian stand-in $DEBIAN_IMAGE (cached)"
    else
      if [ -z "${DEBIAN_MIRROR:-}" ]; then
        DEBIAN_MIRROR=$(apt_mirror bookworm) || die "no Debian bookworm mirror in this machine's apt sources \
(a deb line or .sources stanza for suite bookworm, component main, over http or https, in /etc/apt/sources.list \
or /etc/apt/sources.list.d): set DEBIAN_MIRROR, e.g. DEBIAN_MIRROR=http://<mirror>/debian"
      fi
      DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-$(apt_mirror bookworm-security || true)}
      say "building $DEBIAN_IMAGE with debootstrap from $DEBIAN_MIRROR (about a minute)"
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
        --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >"$scratch/import.log" 2>&1 \
        || { cat "$scratch/import.log" >&2; die "podman import $DEBIAN_IMAGE"; }
      rm -rf "$rootfs"
      pass "Debian stand-in $DEBIAN_IMAGE built in $(seconds_since "$t") s"
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
FROM $DEBIAN_IMAGE
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
}

# source_digest: a digest of everything the project image is built from, kept
# as a label so that a later test can tell whether an image is current.
source_digest() {
  find Dockerfile Package.swift openapi.yaml Plugins Sources Tests -type f -not -path 'Tests/scripts/*' -print0 | sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-64
}

# build_project_image IMAGE: builds the repo's Dockerfile on the base images
# as IMAGE and drops the image it replaced (vfs keeps each as a full copy);
# sets build_seconds. With PREBUILT_BINARY (a static, stripped server binary
# built from these sources, as `make check-binary` leaves it) the image
# takes that one instead of compiling it again inside.
build_project_image() {
  local image=$1 previous current t runtime=() prebuilt=()
  [ -z "${RUNTIME_IMAGE:-}" ] || runtime=(--build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE")
  if [ -n "${PREBUILT_BINARY:-}" ]; then
    [ -x "$PREBUILT_BINARY" ] || die "PREBUILT_BINARY=$PREBUILT_BINARY is not an executable file"
    prebuilt=(--volume "$(cd "$(dirname "$PREBUILT_BINARY")" && pwd):/prebuilt:ro"
              --build-arg "PREBUILT_BINARY=/prebuilt/$(basename "$PREBUILT_BINARY")")
  fi
  say "building $image (FROM $SWIFT_IMAGE, then ${RUNTIME_IMAGE:-scratch}; binary ${PREBUILT_BINARY:-built inside})"
  previous=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  t=$EPOCHREALTIME
  if ! podman_build "${mount_toolchain[@]}" "${prebuilt[@]}" \
      --build-arg "SWIFT_IMAGE=$SWIFT_IMAGE" "${runtime[@]}" \
      --label "topchrome.source-digest=$(source_digest)" \
      --tag "$image" . >"$scratch/build.log" 2>&1; then
    tail -n 40 "$scratch/build.log" >&2
    die "podman build"
  fi
  build_seconds=$(seconds_since "$t")
  pass "image $image built in $build_seconds s"
  current=$("${PODMAN[@]}" image inspect --format '{{.Id}}' "$image")
  if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
    "${PODMAN[@]}" image rm "$previous" >/dev/null 2>&1 || true
  fi
}
