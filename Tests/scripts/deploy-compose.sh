# Sourced by the deploy test (Tests/scripts/deploy-test.sh): what it asks of
# podman-compose and of the running composition. The project's containers,
# networks and volumes by its labels; the Redis and nginx stand-ins; requests
# through the proxy and the checks on their answers; each replica's own
# readiness, health and access log; waiting for a condition. The sourcing
# script sets PROJECT, COMPOSE_FILE, scratch (a temp folder, holding the
# podman wrapper compose runs) and base (the proxy's URL) before calling them.
#
# Checks nothing and takes no time itself.

# compose ARGS...: podman-compose on the project, its output to compose.log.
compose() {
  podman-compose --podman-path "$scratch/podman" --project-name "$PROJECT" --file "$COMPOSE_FILE" \
    --podman-run-args "${RUN_LIMITS[*]}" "$@" >>"$scratch/compose.log" 2>&1
}
# container_of SERVICE: the container podman-compose made for it.
container_of() {
  "${PODMAN[@]}" ps --all --format '{{.Names}}' \
    --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1" | head -n 1
}
# What a project leaves behind: containers, networks, volumes (one per line).
leftovers() {
  "${PODMAN[@]}" ps --all --format 'container {{.Names}}' --filter "label=io.podman.compose.project=$PROJECT"
  "${PODMAN[@]}" network ls --format 'network {{.Name}}' | grep " ${PROJECT}_" || true
  "${PODMAN[@]}" volume ls --format 'volume {{.Name}}' | grep " ${PROJECT}_" || true
}
remove_leftovers() {
  local kind name
  leftovers | while read -r kind name; do
    "${PODMAN[@]}" "$kind" rm --force "$name" >/dev/null 2>&1 || true
  done
}

# standin VARIABLE NAME PACKAGE DOCKERFILE-LINES: unless VARIABLE names an
# image already, builds localhost/NAME-standin:bookworm FROM the Debian
# stand-in with Debian's PACKAGE (once; kept like the base images) and sets
# VARIABLE to it.
standin() {
  local image=localhost/$2-standin:bookworm t
  [ -z "${!1:-}" ] || return 0
  if "${PODMAN[@]}" image exists "$image"; then
    pass "stand-in $image (cached)"
  else
    t=$EPOCHREALTIME
    mkdir -p "$scratch/$2"
    cat >"$scratch/$2/Containerfile" <<EOF
FROM $DEBIAN_IMAGE
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $3 \\
 && apt-get clean \\
 && rm -rf /var/lib/apt/lists/*
$4
EOF
    podman_build --tag "$image" "$scratch/$2" >"$scratch/$2-build.log" 2>&1 \
      || { tail -n 30 "$scratch/$2-build.log" >&2; die "build stand-in $image"; }
    pass "stand-in $image built in $(seconds_since "$t") s"
  fi
  printf -v "$1" '%s' "$image"
}

# request METHOD PATH [JSON [HEADER...]]: through the proxy; sets $status,
# $body and $headers.
request() {
  local method=$1 path=$2 args=(-sS --max-time 15 -D "$scratch/headers" -o "$scratch/body" -w '%{http_code}')
  shift 2
  args+=(-X "$method")
  if [ $# -gt 0 ]; then
    [ -z "$1" ] || args+=(-H 'Content-Type: application/json' --data "$1")
    shift
  fi
  local header
  for header in "$@"; do args+=(-H "$header"); done
  rm -f "$scratch/headers" "$scratch/body"
  status=$(curl "${args[@]}" "$base$path") || status=000
  body=$(cat "$scratch/body" 2>/dev/null || true)
  headers=$(tr -d '\r' <"$scratch/headers" 2>/dev/null || true)
}
# expect STATUS JQ-FILTER: the last answer had that status and the filter
# holds for its JSON body. has_header REGEX: a header line matches (any case).
expect() { [ "$status" = "$1" ] && jq -e "$2" >/dev/null 2>&1 <<<"$body"; }
has_header() { grep -qi "$1" <<<"$headers"; }

# replica_ready SERVICE: its own /readyz (not through the proxy, which would
# pass the request to the other replica) answers 200.
address_of() {
  "${PODMAN[@]}" inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(container_of "$1")" 2>/dev/null
}
replica_ready() {
  local address
  address=$(address_of "$1") || return 1
  [ -n "$address" ] && curl -fsS -o /dev/null --max-time 2 "http://$address:8080/readyz" 2>/dev/null
}
# wait_until SECONDS COMMAND...: polls every 0.2 s.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
healthy() { "${PODMAN[@]}" healthcheck run "$(container_of "$1")" >/dev/null 2>&1; }
proxy_ready() { curl -fsS -o /dev/null --max-time 2 "$base/readyz" 2>/dev/null; }
# requests_of SERVICE SESSION [SINCE]: how many API requests of that session
# the replica's access log holds (its first 8 hex digits), since a time.
requests_of() {
  local since=()
  [ $# -lt 3 ] || since=(--since "$3")
  "${PODMAN[@]}" logs "${since[@]}" "$(container_of "$1")" 2>&1 |
    grep -c "\"msg\":\"request\".*\"session\":\"${2:0:8}\"" || true
}
now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
