#!/usr/bin/env python3
"""The clients of the deploy test's rolling restart (Tests/scripts/deploy-test.sh).

Usage: deploy-test-client.py BASE_URL SESSION_ID STOP_FILE RESULT_JSON

Through the proxy at BASE_URL, on one session, until STOP_FILE exists:
- a steady writer PUTs inset 1, 2, 3, ... (about 20 a second). A request
  that fails with a 5xx or gets no answer is retried once, after its
  Retry-After (1 s when it has none); any other failure, or a failure of
  that retry, is an error the deployment let through.
- an event stream (one connection at a time) records every event; when its
  connection ends it reconnects after the server's `retry:` with
  Last-Event-ID, as EventSource does.
Then it reads the session once more, gives the stream up to 10 s to deliver
that state, and writes what happened to RESULT_JSON: acknowledged writes,
retries, errors not absorbed, the longest write (retry included), the
stream's connections and the longest time it had none, and whether the
final state is the last acknowledged one and the stream's last event.
Standard library only.

Runs as long as the deploy test's rolling restart (≈ 30 s).
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

TIMEOUT = 10


class Proxy:
    def __init__(self, base):
        url = urllib.parse.urlsplit(base)
        self.host, self.port = url.hostname, url.port

    def connection(self, timeout=TIMEOUT):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        """One request on a connection of its own: (status, headers, body),
        or (None, {}, error text) when no answer came."""
        connection = self.connection()
        try:
            all_headers = {"Content-Type": "application/json"} if body is not None else {}
            all_headers.update(headers or {})
            connection.request(method, path, body=None if body is None else json.dumps(body), headers=all_headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read().decode()
        except (OSError, http.client.HTTPException) as error:
            return None, {}, f"{type(error).__name__}: {error}"
        finally:
            connection.close()


def writer(proxy, session, stop_file, result):
    acks, retries, errors, slowest = [], [], [], 0.0
    value = 0
    while not os.path.exists(stop_file):
        value += 1
        started = time.monotonic()
        answer = None
        for attempt in (1, 2):
            status, headers, body = proxy.request("PUT", f"/v1/sessions/{session}/inset", {"inset": value})
            if status == 200:
                answer = json.loads(body)
                break
            failure = f"inset {value}: {status or 'no answer'} {' '.join(body.split())[:120]}"
            if attempt == 1 and (status is None or status >= 500):
                retries.append(failure)
                try:
                    time.sleep(float(headers.get("Retry-After", "1")))
                except ValueError:
                    time.sleep(1)
            else:
                errors.append(failure)
                break
        slowest = max(slowest, time.monotonic() - started)
        if answer is not None:
            acks.append({"inset": answer["inset"], "version": answer["version"]})
        time.sleep(0.05)
    result.update(acks=acks, retries=retries, errors=errors, slowest_write_seconds=round(slowest, 3))


class Stream:
    """An EventSource: reconnects after `retry:` with Last-Event-ID."""

    def __init__(self, proxy, session):
        self.proxy, self.session = proxy, session
        self.events, self.connections, self.last_id = [], [], None
        self.retry_seconds, self.longest_gap, self.done = 2.0, 0.0, False
        self.retry_field = None  # the server's `retry:`, in ms, once seen
        self.lock = threading.Condition()
        # When the last open connection ended; None while one is open.
        self.closed_at = None

    def run(self):
        while not self.done:
            headers = {"Accept": "text/event-stream"}
            if self.last_id is not None:
                headers["Last-Event-ID"] = self.last_id
            connection = self.proxy.connection(timeout=60)
            opened = False
            try:
                connection.request("GET", f"/v1/sessions/{self.session}/events", headers=headers)
                response = connection.getresponse()
                self.connections.append({"status": response.status, "last_event_id": headers.get("Last-Event-ID")})
                if response.status == 200:
                    opened = True
                    if self.closed_at is not None:
                        self.longest_gap = max(self.longest_gap, time.monotonic() - self.closed_at)
                        self.closed_at = None
                    self.read(response)
            except (OSError, http.client.HTTPException) as error:
                self.connections.append({"error": f"{type(error).__name__}: {error}"})
            finally:
                connection.close()
                if opened:
                    self.closed_at = time.monotonic()
            if not self.done:
                time.sleep(self.retry_seconds)

    def read(self, response):
        event, data, event_id = None, [], None
        while not self.done:
            line = response.fp.readline()
            if not line:
                return
            line = line.decode().rstrip("\r\n")
            if line == "":
                if event == "state" and data:
                    with self.lock:
                        self.events.append({"id": event_id, "state": json.loads("\n".join(data))})
                        self.lock.notify_all()
                if event_id is not None:
                    self.last_id = event_id
                event, data, event_id = None, [], None
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)
                elif field == "id":
                    event_id = value
                elif field == "retry" and value.isdigit():
                    self.retry_field = int(value)
                    self.retry_seconds = self.retry_field / 1000

    def wait_for(self, state, seconds):
        deadline = time.monotonic() + seconds
        with self.lock:
            while not (self.events and self.events[-1]["state"] == state):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
            return True


def main():
    base, session, stop_file, result_file = sys.argv[1:5]
    proxy = Proxy(base)
    stream = Stream(proxy, session)
    threading.Thread(target=stream.run, daemon=True).start()
    written = {}
    write = threading.Thread(target=writer, args=(proxy, session, stop_file, written))
    write.start()
    write.join()

    status, _, body = proxy.request("GET", f"/v1/sessions/{session}")
    final = json.loads(body) if status == 200 else None
    delivered = final is not None and stream.wait_for(final, 10)
    stream.done = True
    last_ack = written["acks"][-1] if written["acks"] else None
    versions = [ack["version"] for ack in written["acks"]]
    result = dict(
        written,
        acks=len(written["acks"]),
        first_ack=written["acks"][0] if written["acks"] else None,
        last_ack=last_ack,
        versions_increase=all(a < b for a, b in zip(versions, versions[1:])),
        final_state=final,
        final_is_last_ack=final is not None and last_ack is not None
        and final["inset"] == last_ack["inset"] and final["version"] == last_ack["version"],
        stream_events=len(stream.events),
        stream_last_event=stream.events[-1] if stream.events else None,
        stream_ends_on_final=delivered,
        stream_connections=stream.connections,
        stream_longest_gap_seconds=round(stream.longest_gap, 3),
        stream_retry_ms=stream.retry_field,
        stream_versions_increase=all(
            a["state"]["version"] < b["state"]["version"] for a, b in zip(stream.events, stream.events[1:])),
    )
    with open(result_file, "w") as file:
        json.dump(result, file, indent=1)


if __name__ == "__main__":
    main()
