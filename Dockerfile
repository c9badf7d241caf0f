# TopChrome container image: a Swift build stage, and a run stage that holds
# only the static server binary, the shared libraries it loads, CA
# certificates and a passwd entry: no shell, no package manager, nothing an
# intruder could use.
#
# Both base images are build arguments, declared before the first FROM so that
# either can be overridden: no registry is reachable on the project's CI
# machines, so the tests substitute images that are already present locally,
# e.g. --build-arg SWIFT_IMAGE=localhost/swift:6.3-bookworm. The build image
# must be Debian bookworm (the package names and version pins below are
# bookworm's); the run stage starts from nothing (`scratch`, which needs no
# registry) and gets its libraries from the build image.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=scratch
# One pin for the headers built against and the library run against. A glob
# on the upstream version: pinned to bookworm's 0.9.75, yet Debian security
# revisions (0.9.75-6+deb12uN) still install.
ARG LIBMICROHTTPD_VERSION=0.9.75-*
# The same for hiredis (the Redis store's client): bookworm's 0.14.1.
ARG HIREDIS_VERSION=0.14.1-*
# And for GnuTLS (HTTPS; libmicrohttpd's TLS): bookworm's 3.7.9.
ARG GNUTLS_VERSION=3.7.9-*
# And for OpenSSL (TLS to Redis, `rediss://`; hiredis 0.14 has none): bookworm's 3.0.
ARG OPENSSL_VERSION=3.0.*
# The CA certificates `rediss://` trusts without --redis-ca-file: any dated
# release, since a trust store should be the newest the mirror has.
ARG CA_CERTIFICATES_VERSION=20*
# Empty (as for users): the binary is built in the build stage. The tests
# name one they built already (`make check-binary`'s, the same build),
# mounted into the build (`podman build --volume DIR:/prebuilt:ro
# --build-arg PREBUILT_BINARY=/prebuilt/topchrome`), so that `make test`
# compiles the static binary once; the stage then only gathers its libraries.
ARG PREBUILT_BINARY=

# --- build -------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS build
ARG LIBMICROHTTPD_VERSION
ARG HIREDIS_VERSION
ARG GNUTLS_VERSION
ARG OPENSSL_VERSION
ARG CA_CERTIFICATES_VERSION
ARG PREBUILT_BINARY
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

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
      ca-certificates="${CA_CERTIFICATES_VERSION}" \
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
# the run stage needs no Swift toolchain or runtime libraries, only the C
# libraries below. Stripping drops the symbol tables (about 9 MB).
# `make check-binary` keeps Foundation and ICU out of this binary.
RUN mkdir -p /build/out \
 && if [ -n "${PREBUILT_BINARY}" ]; then \
      cp "${PREBUILT_BINARY}" /build/out/topchrome; \
    else \
      swift build -c release --static-swift-stdlib --product topchrome \
      && strip -o /build/out/topchrome \
           "$(swift build -c release --static-swift-stdlib --product topchrome --show-bin-path)/topchrome"; \
    fi

# The run stage's whole file system, staged here at the paths it will have:
# - the binary, owned by root so the service user cannot replace it;
# - every shared library the binary loads, as ldd lists them (libmicrohttpd,
#   GnuTLS and its chain, hiredis, OpenSSL, libstdc++, libgcc_s, glibc) and
#   the dynamic loader, at their own paths, which the loader searches without
#   a cache; links resolved, so each is one file; one ldd cannot find stops
#   the build;
# - the copyright files of the Debian packages they come from, where the
#   build image has them (libstdc++'s and libgcc's are gcc-12-base's, which
#   a slimmed image may have left out);
# - CA certificates, where OpenSSL looks by default (/usr/lib/ssl, linked as
#   Debian links it);
# - /etc/passwd and /etc/group naming the service user, for tools that map
#   the uid to a name; any other uid runs the binary just as well.
RUN mkdir -p /build/root/usr/local/bin /build/root/etc/ssl/certs /build/root/usr/lib/ssl \
 && cp /build/out/topchrome /build/root/usr/local/bin/topchrome \
 && ldd /build/out/topchrome >/build/out/libraries \
 && ! grep 'not found' /build/out/libraries \
 && grep -o '/[^ ]*' /build/out/libraries | while read -r library; do \
      cp --parents --dereference "$library" /build/root \
      && package=$(dpkg -S "$library" 2>/dev/null || dpkg -S "$(readlink -f "$library")") \
      && copyright=/usr/share/doc/${package%%:*}/copyright \
      && { [ ! -e "$copyright" ] || cp --parents --dereference "$copyright" /build/root; } \
      || exit 1; \
    done \
 && cp /etc/ssl/certs/ca-certificates.crt /build/root/etc/ssl/certs/ \
 && ln -s /etc/ssl/certs /build/root/usr/lib/ssl/certs \
 && ln -s /etc/ssl/certs/ca-certificates.crt /build/root/usr/lib/ssl/cert.pem \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\ntopchrome:x:10001:10001:topchrome:/nonexistent:/sbin/nologin\n' \
      >/build/root/etc/passwd \
 && printf 'root:x:0:\ntopchrome:x:10001:\n' >/build/root/etc/group \
 && test -x /build/root/usr/local/bin/topchrome \
 && test -n "$(find /build/root -name 'libmicrohttpd.so*')"

# --- run ---------------------------------------------------------------------
FROM ${RUNTIME_IMAGE}
COPY --from=build /build/root/ /

# The binary defaults to 127.0.0.1, unreachable from outside a container.
ENV TOPCHROME_HOST=0.0.0.0 \
    TOPCHROME_PORT=8080
EXPOSE 8080

# The image carries no curl and no shell: the binary probes its own /healthz
# on loopback (exit 0 on 200, else 1; it gives up after 3 s). It reads
# TOPCHROME_PORT like the server does, so change the port through that
# variable, not --port, or the check looks in the wrong place. The server
# answers within milliseconds of starting, hence the short start period.
# Docker and `podman build --format docker` keep HEALTHCHECK; the OCI image
# format has no field for it.
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
