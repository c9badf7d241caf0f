#!/usr/bin/env python3
"""The ceiling of one replica's connection, with its calls' own arguments.

redis-benchmark repeats one command with random numbers in it, so about half
of its calls change their session. A scroll through the replica (wrk's
scroll.lua) changes its session on every request. This sends what the
replica sends for such a scroll, over one connection, DEPTH calls written at
once and their replies read before the next DEPTH: sessions
topchrome:{000000000000}.. round robin, each one's reports alternating far
down and at the top, a fresh tag and seq each. Fails unless nearly every call
changed its session. Prints the calls made and the seconds taken.

Usage: flip-ceiling.py PORT LIBRARY_NAME CALLS [DEPTH=32] [SESSIONS=1000]
"""
import os, socket, sys, time

port, library, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 32
sessions = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
function = f"{library}_apply".encode()
deadline = b"4102444800000"  # 2100-01-01 in ms: the function reads TIME, as for the replica's calls
seq0 = time.time_ns() // 1000  # above any earlier run's
parity = (seq0 // 1000) % 2  # so a run does not start where the last ended


def command(n):
    far = (n // sessions + parity) % 2 == 0
    words = [b"FCALL", function, b"1", b"topchrome:{%012d}" % (n % sessions), os.urandom(6).hex().encode(), deadline,
             b"3600000", b"1.0", b"0", b"q", b"379.5" if far else b"0.5", b"0.0", b"v", str(seq0 + n).encode()]
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


class Replies:
    """RESP2 replies off a socket: just enough to count them and read apply's eighth element."""

    def __init__(self, sock):
        self.sock, self.buffer, self.at = sock, b"", 0

    def line(self):
        while True:
            end = self.buffer.find(b"\r\n", self.at)
            if end >= 0:
                line, self.at = self.buffer[self.at:end], end + 2
                return line
            self.more()

    def more(self):
        self.buffer = self.buffer[self.at:] + self.sock.recv(1 << 16)
        self.at = 0

    def value(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            while len(self.buffer) < self.at + length + 2:
                self.more()
            value, self.at = self.buffer[self.at:self.at + length], self.at + length + 2
            return value
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self.value() for _ in range(count)]
        if kind == b"-":
            sys.exit(f"flip-ceiling: Redis refused a call: {rest.decode()}")
        return rest


sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
replies = Replies(sock)
changed, started = 0, time.monotonic()
for batch in range(0, calls, depth):
    count = min(depth, calls - batch)
    sock.sendall(b"".join(command(n) for n in range(batch, batch + count)))
    for _ in range(count):
        reply = replies.value()
        changed += isinstance(reply, list) and len(reply) == 8 and reply[7] == b"1"
elapsed = time.monotonic() - started
if changed < 0.95 * calls:
    sys.exit(f"flip-ceiling: only {changed} of {calls} calls changed their session")
print(calls, f"{elapsed:.3f}")
