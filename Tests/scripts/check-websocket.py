#!/usr/bin/env python3
"""The WebSocket channel's conformance set, after Autobahn|Testsuite's
categories (framing, pings, reserved bits, opcodes, fragmentation, UTF-8,
limits, closing), with Python's `websockets` as a conforming peer and raw
frames for what no conforming peer sends. Autobahn itself needs Python 2.

Usage: check-websocket.py PATH/TO/topchrome

Takes a few seconds.
"""
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

from websockets.sync.client import connect

from live_server import start_server, stop_server

KEY = "dGhlIHNhbXBsZSBub25jZQ=="
results = []


def check(name, condition, detail=""):
    results.append(condition)
    print(f"{'ok  ' if condition else 'FAIL'} {name}{'' if condition else ': ' + str(detail)}")


def frame(opcode, payload=b"", fin=True, rsv=0, mask=True):
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if mask else 0
    if len(payload) < 126:
        head += bytes([bit | len(payload)])
    elif len(payload) < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", len(payload))
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", len(payload))
    if not mask:
        return head + payload
    key = b"\x37\xfa\x21\x3d"
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class Raw:
    """A client that sends exactly the bytes it is given."""

    def __init__(self, url, session):
        host, port = url.split("//")[1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.sock.sendall((f"GET /v1/sessions/{session}/socket HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.sock.recv(4096)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head
        assert self.next()[0] == 1  # the state

    def read(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def next(self):
        first, second = self.read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", self.read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self.read(8))[0]
        return first & 0x0F, self.read(length)

    def close_code(self):
        """The code of the server's close frame (frames before it passed over), then the end of the stream."""
        while True:
            opcode, payload = self.next()
            if opcode == 8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                self.sock.sendall(frame(8, payload[:2]))
                return code


def check_tls(binary):
    """wss: the socket over the server's TLS (libmicrohttpd relays it), on a
    throwaway self-signed certificate."""
    with tempfile.TemporaryDirectory() as folder:
        cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
        server, url = start_server(binary, "--log-level", "warn", "--tls-cert", cert, "--tls-key", key,
                                   "--socket-messages-per-second", "10000")
        try:
            context = ssl.create_default_context(cafile=cert)
            url = url.replace("127.0.0.1", "localhost")
            request = urllib.request.Request(url + "/v1/sessions", method="POST", data=b"")
            with urllib.request.urlopen(request, context=context) as created:
                session = json.load(created)["id"]
            with connect(f"{url.replace('https', 'wss', 1)}/v1/sessions/{session}/socket", ssl=context) as ws:
                check("TLS: the first message over wss is the state", json.loads(ws.recv(timeout=10))["type"] == "state")
                answered = 0
                # One after another, as an app's client sends: each answer before the next message.
                for seq in range(1, 201):
                    ws.send(json.dumps({"type": "scroll", "id": str(seq), "body": {"contentOffsetY": seq % 2 * 300, "seq": seq}}))
                    while (reply := json.loads(ws.recv(timeout=10)))["type"] != "answer":
                        pass
                    answered += reply.get("id") == str(seq) and reply["state"]["isRevealed"] == (seq % 2 == 0)
                check("TLS: 200 changes in a row over wss are each answered with their state", answered == 200, answered)
        finally:
            stop_server(server)


def main():
    server, url = start_server(sys.argv[1], "--heartbeat", "1", "--max-body-bytes", "100000",
                               "--socket-messages-per-second", "50")
    try:
        def session():
            with urllib.request.urlopen(urllib.request.Request(url + "/v1/sessions", method="POST", data=b"")) as answer:
                return json.load(answer)["id"]

        def raw_close(*frames):
            raw = Raw(url, session())
            for each in frames:
                raw.sock.sendall(each)
            return raw.close_code()

        ws_url = url.replace("http", "ws", 1)

        def answer(ws, message):
            ws.send(json.dumps(message))
            while True:
                received = json.loads(ws.recv(timeout=10))
                if received["type"] == "answer":
                    return received

        # Framing: lengths in each of the three encodings, and no extension offered back.
        with connect(f"{ws_url}/v1/sessions/{session()}/socket") as ws:
            check("framing: no extension negotiated (permessage-deflate offered)",
                  ws.response.headers.get("Sec-WebSocket-Extensions") is None)
            check("framing: the first message is the state", json.loads(ws.recv(timeout=10))["type"] == "state")
            # Batches of 1, 10 and 3,500 reports (the last refused as too many, with its id): 7-bit, 16-bit and 64-bit lengths.
            for count in (1, 10, 3500):
                reply = answer(ws, {"type": "scroll", "id": str(count), "body": [{"contentOffsetY": 0}] * count})
                check(f"framing: a message of {count} reports is answered", reply.get("id") == str(count), reply)
            # Fragmentation: a message in pieces.
            ws.send(iter(['{"type":"inset",', '"id":"frag",', '"body":{"inset":9}}']))
            while (reply := json.loads(ws.recv(timeout=10)))["type"] != "answer":
                pass
            check("fragmentation: a fragmented message is one message", reply.get("id") == "frag", reply)
            # Pings: the client's is answered with its payload.
            pong = ws.ping(b"payload")
            check("pings: a ping is answered", pong.wait(10))
            # Pings: the server pings every second; websockets answers, so the socket outlives two intervals.
            time.sleep(3)
            check("pings: a peer that answers pings stays open", answer(ws, {"type": "disappear", "id": "late"}).get("id") == "late")
            # Closing: the client's close is answered with its code.
            ws.close(1000)
            check("closing: a close is answered with its code", ws.protocol.close_rcvd is not None and ws.protocol.close_rcvd.code == 1000,
                  ws.protocol.close_rcvd)

        text = b'{"type":"disappear","id":"r"}'
        check("reserved bits: RSV1 set closes 1002", raw_close(frame(1, text, rsv=4)) == 1002)
        check("reserved bits: RSV3 set closes 1002", raw_close(frame(1, text, rsv=1)) == 1002)
        check("opcodes: data opcode 3 closes 1002", raw_close(frame(3, text)) == 1002)
        check("opcodes: control opcode 11 closes 1002", raw_close(frame(11)) == 1002)
        check("opcodes: a binary message closes 1008", raw_close(frame(2, b"\x00")) == 1008)
        check("framing: an unmasked frame closes 1002", raw_close(frame(1, text, mask=False)) == 1002)
        check("fragmentation: a continuation with nothing to continue closes 1002", raw_close(frame(0, text)) == 1002)
        check("fragmentation: a new message inside a fragmented one closes 1002",
              raw_close(frame(1, text[:5], fin=False), frame(1, text)) == 1002)
        check("fragmentation: a fragmented ping closes 1002", raw_close(frame(9, b"a", fin=False)) == 1002)
        check("pings: a ping over 125 bytes closes 1002", raw_close(frame(9, b"a" * 126)) == 1002)
        raw = Raw(url, session())
        raw.sock.sendall(frame(1, text[:5], fin=False) + frame(9, b"mid") + frame(0, text[5:]))
        opcode, payload = raw.next()
        check("fragmentation: a ping between fragments is answered first", (opcode, payload) == (10, b"mid"), (opcode, payload))
        check("fragmentation: the message around it is whole",
              json.loads(raw.next()[1]).get("id") == "r")
        check("UTF-8: invalid text closes 1007", raw_close(frame(1, b'{"a":"\xc3\x28"}')) == 1007)
        check("UTF-8: invalid text across fragments closes 1007",
              raw_close(frame(1, b'{"a":"\xf0\x9f', fin=False), frame(0, b'\x28"}')) == 1007)
        raw = Raw(url, session())
        euro = '{"type":"disappear","id":"\u20ac"}'.encode()
        split = euro.index(b"\xe2") + 1
        raw.sock.sendall(frame(1, euro[:split], fin=False) + frame(0, euro[split:]))
        check("UTF-8: a character split across fragments is fine", json.loads(raw.next()[1]).get("id") == "\u20ac")
        check("limits: a message over --max-body-bytes closes 1009", raw_close(frame(1, b" " * 100001)) == 1009)
        check("limits: more messages a second than allowed close 1008", raw_close(*[frame(1, text)] * 80) == 1008)
        check("closing: a close code no peer may send (1005) closes 1002", raw_close(frame(8, struct.pack("!H", 1005))) == 1002)
        check("closing: a one-byte close body closes 1002", raw_close(frame(8, b"\x03")) == 1002)
        check("closing: a close reason that is not UTF-8 closes 1007",
              raw_close(frame(8, struct.pack("!H", 1000) + b"\xff")) == 1007)
        check("closing: a private code (4000) is answered with it", raw_close(frame(8, struct.pack("!H", 4000))) == 4000)
        raw = Raw(url, session())
        silent_close = raw.close_code()  # answers no ping
        check("pings: a peer silent for two intervals closes 1008", silent_close == 1008, silent_close)
    finally:
        stop_server(server)
    check_tls(sys.argv[1])
    failed = results.count(False)
    print(f"websocket conformance: {len(results)} checks, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
