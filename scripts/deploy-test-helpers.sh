# What scripts/deploy-test.sh does to the compose project and through its
# proxy: podman-compose with the flags that work here, the project's
# containers and leftovers, requests and checks through the proxy, and
# waiting for a service. Sourced, not run; the functions read the test's
# PODMAN, RUN_LIMITS, PROJECT, COMPOSE_FILE, $scratch and $base when called.
# shellcheck shell=bash

# --- the compose project ------------------------------------------------------
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

# --- helpers ------------------------------------------------------------------
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
