#!/usr/bin/env python3
"""The ceiling of one replica's connection to a node, with its calls' own arguments.

redis-benchmark repeats one command with random numbers in it, so about half
of its calls change their session. A scroll through the replica (wrk's
scroll.lua) changes its session on every request. This sends what the
replica sends for such a scroll, over one connection per node, DEPTH calls
written at once to each and their replies read before the next DEPTH:
sessions topchrome:{000000000000}.. (created first where missing) round robin,
each one's reports alternating far down and at the top, a fresh tag and seq
each. Given a cluster's primaries, each call goes to the primary that holds
its session's slot, as the replica sends it. Fails unless nearly every call
flipped its session's isRevealed from the call before. Prints the calls made
and the seconds taken. CALLS=0 only creates the sessions (so that a measured
run does not count their creation).

Usage: flip-ceiling.py PORT[,PORT...] LIBRARY_NAME CALLS [DEPTH=32] [SESSIONS=1000]
"""
import os, socket, sys, time

ports, library, calls = [int(port) for port in sys.argv[1].split(",")], sys.argv[2], int(sys.argv[3])
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 32
sessions = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
function = f"{library}_apply".encode()
deadline = b"4102444800000"  # 2100-01-01 in ms: the function reads TIME, as for the replica's calls
seq0 = time.time_ns() // 1000  # above any earlier run's
parity = (seq0 // 1000) % 2  # so a run does not start where the last ended


def resp(words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


def slot(tag):
    """The cluster's hash slot of a key whose hash tag is TAG: CRC16 (XMODEM) mod 16384."""
    crc = 0
    for byte in tag:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc % 16384


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


class Node:
    """One connection to a Redis node, and the sessions whose calls go to it."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.replies, self.sessions, self.sent = Replies(self.sock), [], 0

    def ask(self, *words):
        self.sock.sendall(resp(list(words)))
        return self.replies.value()

    def command(self, n):
        """This node's Nth call."""
        key = self.sessions[n % len(self.sessions)]
        far = (n // len(self.sessions) + parity) % 2 == 0
        return resp([b"FCALL", function, b"1", key, os.urandom(6).hex().encode(), deadline,
                     b"3600000", b"1.0", b"0", b"q", b"379.5" if far else b"0.5", b"0.0", b"v", str(seq0 + n).encode()])


nodes = [Node(port) for port in ports]
owner = {}  # slot -> node, for a cluster
if len(nodes) > 1:
    for start, end, primary, *_ in nodes[0].ask(b"CLUSTER", b"SLOTS"):
        for number in range(int(start), int(end) + 1):
            owner[number] = nodes[ports.index(int(primary[1]))]
for i in range(sessions):
    tag = b"%012d" % i
    (owner[slot(tag)] if owner else nodes[0]).sessions.append(b"topchrome:{%s}" % tag)
for node in nodes:  # create returns nil for a session that exists
    node.sock.sendall(b"".join(resp([b"FCALL", f"{library}_create".encode(), b"1", key, b"0123456789ab", deadline, b"3600000", b"0"])
                               for key in node.sessions))
    for _ in node.sessions:
        node.replies.value()

revealed = {}  # session -> isRevealed in its last reply
flipped, followed, made, started = 0, 0, 0, time.monotonic()
while made < calls:
    written = []
    for node in nodes:
        count = min(depth, calls - made)
        node.sock.sendall(b"".join(node.command(n) for n in range(node.sent, node.sent + count)))
        written.append((node, node.sent, count))
        node.sent, made = node.sent + count, made + count
    for node, first, count in written:
        for n in range(first, first + count):
            reply = node.replies.value()
            if not (isinstance(reply, list) and len(reply) == 8 and reply[0] == b"done"):
                sys.exit(f"flip-ceiling: apply answered {reply!r}")
            key = node.sessions[n % len(node.sessions)]
            if key in revealed:
                followed += 1
                flipped += reply[2] != revealed[key]
            revealed[key] = reply[2]
elapsed = time.monotonic() - started
if flipped < 0.95 * followed:
    sys.exit(f"flip-ceiling: only {flipped} of {followed} calls after a session's first flipped it")
print(calls, f"{elapsed:.3f}")
