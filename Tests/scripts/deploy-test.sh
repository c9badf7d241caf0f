#!/usr/bin/env bash
# End-to-end test of deploy/compose.yaml: Redis, two topchrome replicas on it
# and nginx in front, brought up with podman-compose and drilled through the
# proxy only: the README walkthrough, an event stream fed by both replicas, a
# rolling restart under a steady writer and a stream, Redis killed and brought
# back in a new container on its volume, and a `down` that leaves nothing
# behind. Prints a summary with the time each step took; exits non-zero if
# any check fails.
#
# No registry is reachable on the project's machines: the project image is
# built on the container test's Debian stand-ins (Tests/scripts/container-base.sh),
# and Redis and nginx are stand-ins too, built FROM the same Debian with its
# redis-server and nginx (REDIS_IMAGE and PROXY_IMAGE name other images,
# e.g. the official redis:7 and nginx:1.27 where a registry is reachable).
# An image built from the current sources (by this test or the container
# test) is reused.
#
# Needs root (rootful podman). Installs podman, runc, debootstrap, curl, jq,
# podman-compose and the CNI dnsname plugin (the replicas and the proxy find
# each other by name) with apt-get when missing, and check-jsonschema (the
# Compose specification's schema) into .build/python. Other settings:
#   TOPCHROME_TEST_PORT   the proxy's port on 127.0.0.1 (default: a free one)
#   TOPCHROME_TEST_IMAGE  project image tag (default localhost/topchrome:deploy-test)
#   DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR   as for the container test
#
# Takes ≈ 1–2 min with the images cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=Tests/scripts/container-base.sh
. Tests/scripts/container-base.sh
# shellcheck source=Tests/scripts/deploy-compose.sh
. Tests/scripts/deploy-compose.sh

IMAGE=${TOPCHROME_TEST_IMAGE:-localhost/topchrome:deploy-test}
PROJECT=topchrome-deploy-test-$$
COMPOSE_FILE=deploy/compose.yaml
# More than the replicas' --shutdown-timeout (compose.yaml's stop_grace_period).
STOP_TIMEOUT=15
REPLICAS=(topchrome-1 topchrome-2)
PYTHON=$(command -v python3)
declare -a background_pids=()
composed=""

# step NAME: starts timing a step; step_done: records how long it took.
step() { step_name=$1; step_started=$EPOCHREALTIME; say "$1"; }
step_done() { figures+=("$(printf 'step %-28s %6s s' "$step_name" "$(seconds_since "$step_started")")"); }

exec 3>&1 4>&2  # the terminal, for cleanup: a trap can fire inside a redirection
cleanup() {
  local status=$? pid
  exec 1>&3 2>&4
  [ -z "$building" ] || remove_build_leftovers
  for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "$composed" ]; then
    if [ "$failures" -gt 0 ] || [ "$status" -ne 0 ]; then
      for service in redis "${REPLICAS[@]}" proxy; do
        echo "--- $service log ---"
        "${PODMAN[@]}" logs "$(container_of "$service")" 2>&1 | tail -n 25 || true
      done
    fi
    compose down --volumes >/dev/null 2>&1 || true
    remove_leftovers
  fi
  [ -z "$scratch" ] || rm -rf "$scratch"
  print_summary "deploy test" "$status" || status=$?
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools --------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "needs root (rootful podman): sudo env \"PATH=\$PATH\" $0"
install_missing podman runc debootstrap curl jq podman-compose golang-github-containernetworking-plugin-dnsname
scratch=$(mktemp -d /var/tmp/topchrome-deploy-test.XXXXXX)

# podman-compose runs podman with the flags that work here through a wrapper.
printf '#!/bin/sh\nexec %s "$@"\n' "${PODMAN[*]}" >"$scratch/podman"
chmod +x "$scratch/podman"

# --- the compose file against the Compose specification -----------------------
# What docker compose would refuse (podman-compose 1.0.3 checks little):
# check-jsonschema carries the specification's schema.
venv=.build/python
if [ ! -x "$venv/bin/check-jsonschema" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check check-jsonschema
fi
check "$COMPOSE_FILE valid against the Compose specification" \
  "$venv/bin/check-jsonschema" --builtin-schema vendor.compose-spec "$COMPOSE_FILE"

# --- images -------------------------------------------------------------------
base_images
digest=$(source_digest)
reuse=""
for candidate in "$IMAGE" localhost/topchrome:container-test; do
  label=$("${PODMAN[@]}" image inspect --format '{{index .Labels "topchrome.source-digest"}}' "$candidate" 2>/dev/null || true)
  if [ "$label" = "$digest" ]; then reuse=$candidate; break; fi
done
if [ -n "$reuse" ]; then
  [ "$reuse" = "$IMAGE" ] || "${PODMAN[@]}" tag "$reuse" "$IMAGE"
  pass "image $IMAGE (built from these sources already, as $reuse)"
else
  build_project_image "$IMAGE"
  figures+=("build time     $build_seconds s (project image)")
fi

# As the official image: runs as user redis in /data, which is a volume.
standin REDIS_IMAGE redis redis-server 'RUN mkdir /data && chown redis:redis /data
USER redis
WORKDIR /data
VOLUME /data
CMD ["redis-server", "--protected-mode", "no"]'
standin PROXY_IMAGE nginx nginx 'STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]'
port=${TOPCHROME_TEST_PORT:-$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
base=http://127.0.0.1:$port
export TOPCHROME_IMAGE=$IMAGE REDIS_IMAGE PROXY_IMAGE TOPCHROME_PORT=$port

# --- up -----------------------------------------------------------------------
step "up and healthy"
composed=yes
compose up --detach --no-build || { tail -n 30 "$scratch/compose.log" >&2; die "podman-compose up"; }
for service in redis "${REPLICAS[@]}" proxy; do
  [ -n "$(container_of "$service")" ] || die "container of service $service"
done
pass "podman-compose up: redis, ${REPLICAS[*]}, proxy on $base"
check "redis healthy (health check: redis-cli ping)" wait_until 30 healthy redis
for replica in "${REPLICAS[@]}"; do
  check "$replica healthy (health check: topchrome healthcheck)" wait_until 30 healthy "$replica"
  check "$replica ready (/readyz 200: it reaches Redis)" wait_until 30 replica_ready "$replica"
done
check "proxy answers /readyz on $base" wait_until 30 proxy_ready
step_done
[ "$failures" -eq 0 ] || die "the deployment did not come up"

# --- the README walkthrough, through the proxy ---------------------------------
step "walkthrough"
request POST /v1/sessions '{"inset": 59}'
id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
check "create -> 201, 32-hex id, inset 59, version 1 ($body)" \
  expect 201 '(.id | test("^[0-9a-f]{32}$")) and .inset == 59 and .isRevealed == true and .version == 1'
check "create: Location and ETag \"1\"" has_header "^location: .*/v1/sessions/$id\$"
[ -n "$id" ] || die "no session id to go on with"
request GET "/v1/sessions/$id"
check "read -> 200, ETag \"1.<tag>\"" eval 'expect 200 ".id == \"$id\"" && has_header "^etag: \"1\.[0-9a-f]\{12\}\"$"'
request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 240, "contentInsetTop": 59}'
check "scroll far down -> hidden, version 2 ($body)" expect 200 '.isRevealed == false and .version == 2'
request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 0, "axis": "horizontal"}'
check "horizontal report -> changes nothing ($body)" expect 200 '.isRevealed == false and .version == 2'
request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": -59, "contentInsetTop": 59}'
check "back to the top -> revealed, version 3 ($body)" expect 200 '.isRevealed == true and .version == 3'
request POST "/v1/sessions/$id/scroll" '[{"contentOffsetY": 300, "seq": 1}, {"contentOffsetY": 600, "seq": 2}]'
check "batch -> hidden, version 4 ($body)" expect 200 '.isRevealed == false and .version == 4'
request POST "/v1/sessions/$id/scroll" '{"contentOffsetY": 0, "seq": 2}'
check "stale seq -> ignored, version 4 ($body)" expect 200 '.isRevealed == false and .version == 4'
etag=$(sed -n 's/^etag: //Ip' <<<"$headers")
request PUT "/v1/sessions/$id/inset" '{"inset": 47}' 'If-Match: "3.000000000000"'
check "inset with a stale If-Match -> 412 ($status)" test "$status" = 412
request PUT "/v1/sessions/$id/inset" '{"inset": 47}' "If-Match: $etag"
check "inset with If-Match $etag -> 200, version 5 ($body)" expect 200 '.inset == 47 and .version == 5'
request POST "/v1/sessions/$id/disappear"
check "disappear -> revealed, version 6 ($body)" expect 200 '.isRevealed == true and .version == 6'
etag=$(sed -n 's/^etag: //Ip' <<<"$headers")
request GET "/v1/sessions/$id" '' "If-None-Match: $etag"
check "If-None-Match $etag -> 304 ($status)" test "$status" = 304
t=$EPOCHREALTIME
request GET "/v1/sessions/$id" '' "If-None-Match: $etag" 'Prefer: wait=2'
waited=$(seconds_since "$t")
check "long-poll, nothing new -> 304 after the 2 s wait ($status after $waited s)" \
  eval '[ "$status" = 304 ] && awk -v w="$waited" "BEGIN { exit !(w >= 1.9) }"'
# A long-poll on one replica wakes for a change made through the proxy,
# whichever replica takes it.
curl -sS --max-time 15 -o "$scratch/longpoll" -w '%{http_code}' -H "If-None-Match: $etag" -H 'Prefer: wait=10' \
  "$base/v1/sessions/$id" >"$scratch/longpoll.status" 2>/dev/null &
longpoll=$!
sleep 0.5
request PUT "/v1/sessions/$id/inset" '{"inset": 40}'
t=$EPOCHREALTIME
wait "$longpoll" || true
check "long-poll wakes for a change -> 200, version 7 (after $(seconds_since "$t") s)" \
  eval '[ "$(cat "$scratch/longpoll.status")" = 200 ] && jq -e ".version == 7 and .inset == 40" "$scratch/longpoll" >/dev/null'
request DELETE "/v1/sessions/$id"
check "delete -> 204 ($status)" test "$status" = 204
request GET "/v1/sessions/$id"
check "deleted -> 404 problem+json ($status)" eval '[ "$status" = 404 ] && has_header "^content-type: application/problem+json"'
step_done

# --- an event stream fed through both replicas ---------------------------------
step "stream across replicas"
request POST /v1/sessions '{"inset": 10}'
stream_id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
[ -n "$stream_id" ] || die "create the stream's session ($status $body)"
curl -sN --max-time 30 "$base/v1/sessions/$stream_id/events" >"$scratch/events" 2>/dev/null &
stream=$!
background_pids+=("$stream")
wait_until 5 grep -q '^id: 1\.' "$scratch/events" || fail "stream opened (initial state, id 1.<tag>)"
# Event ids are "<version>.<tag>": the version is what counts here.
stream_has() { tr -d '\r' <"$scratch/events" | grep -qx "id: $1\.[0-9a-f]\{12\}"; }
# Each change must come through before the next is made: a proxy that holds
# events back in a buffer fails here.
late=0
slowest_event=0
for inset in $(seq 11 30); do
  request PUT "/v1/sessions/$stream_id/inset" "{\"inset\": $inset}"
  [ "$status" = 200 ] || fail "change inset $inset through the proxy -> $status"
  t=$EPOCHREALTIME
  wait_until 2 stream_has "$((inset - 9))" || late=$((late + 1))
  slowest_event=$(awk -v a="$slowest_event" -v b="$(seconds_since "$t")" 'BEGIN { printf "%.1f", (b > a ? b : a) }')
done
check "each change reached the stream within 2 s, before the next change ($late late; slowest $slowest_event s)" \
  test "$late" = 0
figures+=("stream:        slowest event $slowest_event s from the change's answer (polled every 0.2 s)")
check "stream received all 20 changes, in order (ids 2..21)" \
  wait_until 10 eval '[ "$(grep "^id: " "$scratch/events" | tr -d "\r" | cut -c5- | cut -d. -f1 | paste -sd,)" = "$(seq -s, 1 21)" ]'
check "stream's last event is inset 30, version 21" \
  eval 'grep "^data: " "$scratch/events" | tail -n 1 | cut -c7- | jq -e ".inset == 30 and .version == 21" >/dev/null'
kill "$stream" 2>/dev/null || true
wait "$stream" 2>/dev/null || true
sleep 0.5  # access logs are written within a quarter of a second
for replica in "${REPLICAS[@]}"; do
  count=$(requests_of "$replica" "$stream_id")
  check "$replica answered requests of that session ($count in its access log)" test "$count" -gt 0
done
step_done

# --- rolling restart under a writer and a stream -------------------------------
step "rolling restart"
request POST /v1/sessions '{"inset": 1}'
drill_id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
[ -n "$drill_id" ] || die "create the drill's session ($status $body)"
"$PYTHON" Tests/scripts/deploy-test-client.py "$base" "$drill_id" "$scratch/stop-writer" "$scratch/drill.json" \
  >"$scratch/drill.log" 2>&1 &
drill=$!
background_pids+=("$drill")
sleep 2
for replica in "${REPLICAS[@]}"; do
  container=$(container_of "$replica")
  address_before=$(address_of "$replica")
  t=$EPOCHREALTIME
  "${PODMAN[@]}" stop --time "$STOP_TIMEOUT" "$container" >/dev/null || fail "podman stop $replica"
  stop_seconds=$(seconds_since "$t")
  exit_code=$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$container")
  check "$replica stopped on SIGTERM in $stop_seconds s, exit code $exit_code" test "$exit_code" = 0
  sleep 2  # the writer and the stream run on the other replica meanwhile
  restarted_at=$(now)
  t=$EPOCHREALTIME
  "${PODMAN[@]}" start "$container" >/dev/null || fail "podman start $replica"
  check "$replica ready again in $(seconds_since "$t") s" wait_until 30 replica_ready "$replica"
  figures+=("$(printf '%-14s stop %s s (SIGTERM to exit), back to ready %s s; address %s -> %s' \
    "$replica" "$stop_seconds" "$(seconds_since "$t")" "$address_before" "$(address_of "$replica")")")
  # nginx looked the replica's name up when it started; the replica may be
  # back at another address.
  check "proxy reloaded (nginx -s reload)" "${PODMAN[@]}" exec "$(container_of proxy)" nginx -s reload
  sleep 3
  count=$(requests_of "$replica" "$drill_id" "$restarted_at")
  check "$replica takes the writer's requests again after its restart ($count)" test "$count" -gt 0
done
touch "$scratch/stop-writer"
wait "$drill" || fail "the drill's clients ended with status $? ($(tail -n 3 "$scratch/drill.log"))"
if [ -s "$scratch/drill.json" ]; then
  drill() { jq -r "$@" "$scratch/drill.json"; }
  check "writer: $(drill .acks) changes acknowledged, $(drill '.retries | length') retried, no error left\
$(drill 'if (.errors | length) > 0 then " (" + (.errors[:3] | join("; ")) + (if (.errors | length) > 3 then "; …" else "" end) + ")" else "" end')" \
    test "$(drill '.errors | length')" = 0
  check "writer: versions only grow" test "$(drill .versions_increase)" = true
  check "no acknowledged change lost: the session ends on the last one ($(drill -c .last_ack) vs $(drill -c .final_state))" \
    test "$(drill .final_is_last_ack)" = true
  check "stream: the server sets the reconnection delay (retry: $(drill .stream_retry_ms) ms)" \
    test "$(drill '.stream_retry_ms // 0')" -gt 0
  check "stream reconnected with Last-Event-ID ($(drill '[.stream_connections[] | select(.last_event_id != null)] | length') of \
$(drill '.stream_connections | length') connections)" \
    test "$(drill '[.stream_connections[] | select(.status == 200 and .last_event_id != null)] | length')" -gt 0
  check "stream ends on the last state ($(drill .stream_events) events; last $(drill -c .stream_last_event.state))" \
    test "$(drill .stream_ends_on_final)" = true
  check "stream: versions only grow" test "$(drill .stream_versions_increase)" = true
  figures+=("rolling restart: writer $(drill .acks) acknowledged, $(drill '.retries | length') retried\
$(drill 'if (.retries | length) > 0 then " (" + ([.retries[] | split(": ")[1] | split(" ")[0]] | group_by(.)
  | map("\(length)× \(.[0])") | join(", ")) + ")" else "" end'), \
$(drill '.errors | length') not absorbed; slowest write $(drill .slowest_write_seconds) s")
  figures+=("rolling restart: stream $(drill '.stream_connections | length') connections, \
longest without one $(drill .stream_longest_gap_seconds) s")
  [ "$(drill '.retries | length')" = 0 ] || printf '  retried: %s\n' "$(drill '.retries | join("; ")')"
else
  fail "the drill wrote no result ($(tail -n 5 "$scratch/drill.log"))"
fi
step_done

# --- Redis restarted: sessions are still there ---------------------------------
# A crash (SIGKILL: no save at shutdown), then a new container on the same
# volume: what survives is what the append-only file holds.
step "redis killed, new container"
request GET "/v1/sessions/$drill_id"
before=$(jq -c '{inset, isRevealed, version}' <<<"$body" 2>/dev/null || true)
request POST /v1/sessions '{"inset": 33}'
kept_id=$(jq -r '.id // empty' <<<"$body" 2>/dev/null || true)
sleep 1.5  # appendfsync everysec: an acknowledged change is on disk within a second
"${PODMAN[@]}" kill --signal KILL "$(container_of redis)" >/dev/null || fail "podman kill redis"
request GET "/v1/sessions/$kept_id"
check "Redis down: API answers 503 with Retry-After ($status)" eval '[ "$status" = 503 ] && has_header "^retry-after:"'
request GET /readyz
check "Redis down: /readyz 503 ($status)" test "$status" = 503
"${PODMAN[@]}" rm --force "$(container_of redis)" >/dev/null || fail "podman rm redis"
t=$EPOCHREALTIME
compose up --detach --no-build redis || fail "podman-compose up redis (a new container on the volume)"
check "redis healthy again" wait_until 30 healthy redis
for replica in "${REPLICAS[@]}"; do
  check "$replica ready again" wait_until 30 replica_ready "$replica"
done
figures+=("redis back:     replicas ready $(seconds_since "$t") s after its up")
check "proxy serves again" wait_until 30 proxy_ready
figures+=("redis back:     proxy serves $(seconds_since "$t") s after its up")
request GET "/v1/sessions/$kept_id"
check "a session made before the crash is there ($body)" expect 200 ".id == \"$kept_id\" and .inset == 33 and .version == 1"
request GET "/v1/sessions/$drill_id"
check "the drill's session is there as it was ($before)" \
  eval 'expect 200 ". | {inset, isRevealed, version} == $before"'
step_done

# --- down ---------------------------------------------------------------------
step "down"
compose down --volumes || fail "podman-compose down --volumes"
left=$(leftovers)
if grep -q '^network ' <<<"$left" && ! grep -qv '^network ' <<<"$left"; then
  # podman-compose 1.0.3 (Debian 12) removes containers and volumes but not
  # the network it made; docker compose and later podman-compose do.
  printf '  note  podman-compose left %s: removed\n' "$(grep '^network ' <<<"$left" | cut -d' ' -f2 | paste -sd' ')"
  summary+=("note  podman-compose $(podman-compose version 2>/dev/null | awk '/^podman-compose/ { print $NF }') left its network; the test removed it")
  remove_leftovers
  left=$(leftovers)
fi
check "nothing left: no container, network or volume of the project${left:+ ($left)}" test -z "$left"
composed=""
step_done
