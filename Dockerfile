# TopChrome container image: a Swift build stage and a slim Debian run stage.
#
# Both base images are build arguments, declared before the first FROM so that
# either can be overridden: no registry is reachable on the project's CI
# machines, so the tests substitute images that are already present locally,
# e.g. --build-arg SWIFT_IMAGE=localhost/swift:6.3-bookworm.
# Both must be Debian bookworm: the binary links against bookworm's glibc and
# libmicrohttpd12, and the package names and version pins below are bookworm's.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# One pin for both stages, so the headers built against match the library run
# against. A glob on the upstream version: pinned to bookworm's 0.9.75, yet
# Debian security revisions (0.9.75-6+deb12uN) still install.
ARG LIBMICROHTTPD_VERSION=0.9.75-*
# The same for hiredis (the Redis store's client): bookworm's 0.14.1.
ARG HIREDIS_VERSION=0.14.1-*
# And for GnuTLS's headers (build stage only; the run stage gets the library
# with libmicrohttpd12): bookworm's 3.7.9.
ARG GNUTLS_VERSION=3.7.9-*
# And for OpenSSL (TLS to Redis, `rediss://`; hiredis 0.14 has none): bookworm's 3.0.
ARG OPENSSL_VERSION=3.0.*

# --- build -------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
ARG LIBMICROHTTPD_VERSION
ARG HIREDIS_VERSION
ARG GNUTLS_VERSION
ARG OPENSSL_VERSION

# The CMicroHTTPD system-library target finds libmicrohttpd through pkg-config,
# and links GnuTLS itself (it hands TLS handshakes their certificate);
# CHiredis finds hiredis's headers in /usr/include, COpenSSL OpenSSL's.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd-dev="${LIBMICROHTTPD_VERSION}" \
      libgnutls28-dev="${GNUTLS_VERSION}" \
      libhiredis-dev="${HIREDIS_VERSION}" \
      libssl-dev="${OPENSSL_VERSION}" \
      pkg-config="1.8.*" \
 && rm -rf /var/lib/apt/lists/*

# SwiftPM and clang keep their module caches under $HOME / $XDG_CACHE_HOME;
# point them at a known writable place rather than whatever the base image's
# user setup (or a rootless builder) provides.
ENV HOME=/build/home \
    XDG_CACHE_HOME=/build/home/.cache
WORKDIR /build/src

# Only what the build reads. Tests/ is not compiled, but SwiftPM checks that
# every target's directory exists when it loads the manifest, test targets
# included, so the manifest fails to load without it. No `swift package
# resolve` step: the package has no remote dependencies.
COPY Package.swift openapi.yaml ./
COPY Plugins ./Plugins
COPY Sources ./Sources
COPY Tests ./Tests

# --static-swift-stdlib links the Swift runtime (and FoundationEssentials, the
# only part of Foundation the server uses: no ICU data) into the binary, so
# the run stage needs no Swift toolchain or runtime libraries: only glibc,
# libstdc++/libgcc (already in bookworm-slim) and libmicrohttpd12. Stripping
# drops the symbol tables (about 9 MB). `make check-binary` keeps Foundation
# and ICU out of this binary.
RUN swift build -c release --static-swift-stdlib --product topchrome \
 && mkdir -p /build/out \
 && strip -o /build/out/topchrome \
      "$(swift build -c release --static-swift-stdlib --product topchrome --show-bin-path)/topchrome"

# --- run ---------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
ARG LIBMICROHTTPD_VERSION
ARG HIREDIS_VERSION
ARG OPENSSL_VERSION

# The shared libraries the binary needs beyond the base image: libmicrohttpd
# (it brings GnuTLS, which the binary also links, as a dependency), hiredis
# and OpenSSL's libssl3 (not in bookworm-slim), for `--store redis://…` and
# `rediss://…`. `apt-get clean`: debian:bookworm-slim
# drops apt's caches by itself, a locally built bookworm base may not (about
# 75 MB of package caches otherwise end up in the image).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12="${LIBMICROHTTPD_VERSION}" \
      libhiredis0.14="${HIREDIS_VERSION}" \
      libssl3="${OPENSSL_VERSION}" \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 topchrome \
 && useradd --system --no-log-init --uid 10001 --gid topchrome \
      --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin topchrome

# Owned by root, so the service user cannot replace its own binary.
COPY --from=build /build/out/topchrome /usr/local/bin/topchrome

# The binary defaults to 127.0.0.1, unreachable from outside a container.
ENV TOPCHROME_HOST=0.0.0.0 \
    TOPCHROME_PORT=8080
EXPOSE 8080

# The image carries no curl: the binary probes its own /healthz on loopback
# (exit 0 on 200, else 1; it gives up after 3 s). It reads TOPCHROME_PORT like
# the server does, so change the port through that variable, not --port, or
# the check looks in the wrong place. The server answers within milliseconds
# of starting, hence the short start period. Docker and `podman build
# --format docker` keep HEALTHCHECK; the OCI image format has no field for it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/topchrome", "healthcheck"]

# topchrome stops gracefully on SIGTERM (drains in-flight requests); exec-form
# ENTRYPOINT makes it PID 1, so it receives the signal directly, and flags
# given to `run` are appended to it.
STOPSIGNAL SIGTERM
# Numeric, so runtimes enforcing "run as non-root" can check it without
# reading /etc/passwd.
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/topchrome"]
