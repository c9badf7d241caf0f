#!/usr/bin/env python3
"""Reads the server's /metrics with Prometheus' own parser and checks that
the counters move as requests are made.

Usage: check-metrics.py PATH/TO/topchrome

Takes a few seconds.
"""
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from live_server import start_server, stop_server


def fetch(base, path, method="GET", body=None, context=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, context=context) as response:
        return response.read().decode()


# Families that must be there, with their Prometheus types: the standard
# process ones (as every client library names them), the store's health and
# the connections (open, refused by reason).
REQUIRED_FAMILIES = {
    "process_cpu_seconds_total": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_start_time_seconds": "gauge",
    "process_max_fds": "gauge",
    "topchrome_store_up": "gauge",
    "topchrome_connections_open": "gauge",
    "topchrome_connections_refused_total": "counter",
    "topchrome_session_creations_limited_total": "counter",
}

TYPES = {}


def samples(base):
    """Every sample as {(name, frozenset(labels)): value}, via the official parser;
    each family's type goes to TYPES (the parser names a counter without _total)."""
    result = {}
    for family in text_string_to_metric_families(fetch(base, "/metrics")):
        TYPES[family.name] = family.type
        for sample in family.samples:
            result[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return result


def has_family(name, kind):
    return TYPES.get(name.removesuffix("_total") if kind == "counter" else name) == kind


# Families a server serving HTTPS adds: the certificate's expiry and its reloads.
TLS_FAMILIES = {
    "topchrome_tls_certificate_expiry_timestamp_seconds": "gauge",
    "topchrome_tls_reloads_total": "counter",
    "topchrome_tls_last_reload_successful": "gauge",
}


def check_tls(binary):
    """The TLS families, from a server on a throwaway self-signed certificate valid for 2 days."""
    with tempfile.TemporaryDirectory() as folder:
        cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
        server, base = start_server(binary, "--log-level", "warn", "--tls-cert", cert, "--tls-key", key)
        try:
            context = ssl.create_default_context(cafile=cert)
            TYPES.clear()
            values = {}
            for family in text_string_to_metric_families(fetch(base.replace("127.0.0.1", "localhost"), "/metrics",
                                                                context=context)):
                TYPES[family.name] = family.type
                for sample in family.samples:
                    values[(sample.name, frozenset(sample.labels.items()))] = sample.value
        finally:
            stop_server(server)
    checks = {f"HTTPS: {name} is a {kind}": has_family(name, kind) for name, kind in TLS_FAMILIES.items()}
    expiry = values.get(("topchrome_tls_certificate_expiry_timestamp_seconds", frozenset()), 0)
    checks["HTTPS: certificate expires in about 2 days"] = abs(expiry - (time.time() + 2 * 86400)) < 600
    checks["HTTPS: no reload yet"] = values.get(("topchrome_tls_reloads_total", frozenset({("result", "replaced")}))) == 0
    return checks


def main():
    server, base = start_server(sys.argv[1], "--log-level", "warn")
    try:
        before = samples(base)
        session = json.loads(fetch(base, "/v1/sessions", "POST"))
        for offset in (400, 0, 400):
            fetch(base, f"/v1/sessions/{session['id']}/scroll", "POST", {"contentOffsetY": offset})
        after = samples(base)

        def moved(name, **labels):
            key = (name, frozenset(labels.items()))
            return after.get(key, 0) - before.get(key, 0)

        checks = {
            "scroll requests counted": moved("topchrome_http_requests_total", method="POST",
                                             route="/v1/sessions/{id}/scroll", status="200") == 3,
            "session creation counted": moved("topchrome_http_requests_total", method="POST",
                                              route="/v1/sessions", status="201") == 1,
            "durations observed": moved("topchrome_http_request_duration_seconds_count",
                                        route="/v1/sessions/{id}/scroll") == 3,
            "reports applied": moved("topchrome_scroll_reports_total", outcome="applied") == 3,
            "island flipped three times": moved("topchrome_reveal_flips_total") == 3,
            "sessions gauge": after[("topchrome_sessions", frozenset())] == 1,
            "build info": [value for (name, labels), value in after.items()
                           if name == "topchrome_build_info" and dict(labels).get("version") == "1.0.0"
                           and dict(labels).get("commit")] == [1],
            "store up": after.get(("topchrome_store_up", frozenset())) == 1,
            "CPU time used": after.get(("process_cpu_seconds_total", frozenset()), 0) > 0,
            "descriptors open": after.get(("process_open_fds", frozenset()), 0) > 0,
            "started in the past": 1_700_000_000 < after.get(("process_start_time_seconds", frozenset()), 0) <= time.time(),
        }
        for name, kind in REQUIRED_FAMILIES.items():
            checks[f"{name} is a {kind}"] = has_family(name, kind)
        checks["plain HTTP: no TLS families"] = not any(name.startswith("topchrome_tls_") for name in TYPES)
        checks.update(check_tls(sys.argv[1]))
        for name, passed in checks.items():
            print(("ok   " if passed else "FAIL ") + name)
        print(f"metrics: {len(after)} samples parsed, {sum(checks.values())} passed, {len(checks) - sum(checks.values())} failed")
        return 0 if all(checks.values()) else 1
    finally:
        stop_server(server)


if __name__ == "__main__":
    sys.exit(main())
