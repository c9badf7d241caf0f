"""Devices as scripts/bench-socket.sh drives them: each sends scroll
reports the way TopChromeClient does, over HTTP (a batch per request, one
request in flight, 50 ms apart, an event stream open beside) or over the
session's WebSocket (one answered message in flight, no pacing), and
follows the session's states. asyncio, standard library and `websockets`.

Measures nothing itself and takes no time: bench_socket.py imports it.
"""
import asyncio
import json
import time

from websockets.asyncio.client import connect

PACING = 0.05  # TopChromeClient's minimumSendInterval


def report(seq):
    """Report `seq`. A sawtooth of one point a report from 2 to 99 over an
    exitUntilCollapsed chrome 100 points tall (offsets up to the reveal
    threshold, 1, all show it fully): every report is a visible change (a
    new version), so every one reaches the watchers and a state's lastSeq
    says which report it reflects."""
    return {"contentOffsetY": 2 + seq % 98, "contentInsetTop": 0, "seq": seq}


def body(batch):
    """One report as an object, more as an array, as the client sends them."""
    return batch[0] if len(batch) == 1 else batch


class HTTPConnection:
    """One kept-alive HTTP/1.1 connection; requests one at a time."""

    def __init__(self, host, port):
        self.host, self.port = host, port

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def request(self, method, path, payload=None):
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        data = b"" if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        if method != "GET":
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + data)
        status, length, _ = await self.head()
        return status, await self.reader.readexactly(length)

    async def head(self):
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = {line.split(":", 1)[0].lower(): line.split(":", 1)[1].strip() for line in lines[1:] if ":" in line}
        return int(lines[0].split()[1]), int(fields.get("content-length", 0)), fields

    def close(self):
        self.writer.close()


async def create_sessions(host, port, count):
    connection = await HTTPConnection(host, port).open()
    ids = []
    for _ in range(count):
        status, data = await connection.request("POST", "/v1/sessions", {"inset": 100, "behavior": "exitUntilCollapsed"})
        assert status == 201, (status, data)
        ids.append(json.loads(data)["id"])
    connection.close()
    return ids


class Follower:
    """What a device hears of its session: `on_state(lastSeq)` for each state."""

    def __init__(self, on_state=None):
        self.on_state = on_state or (lambda seq: None)
        self.opened = asyncio.Event()
        self.states = 0

    def heard(self, state):
        self.states += 1
        self.opened.set()
        if state.get("lastSeq") is not None:
            self.on_state(state["lastSeq"])


class EventStream(Follower):
    """`GET …/events`, its chunked body read as Server-Sent Events."""

    async def run(self, host, port, session):
        connection = await HTTPConnection(host, port).open()
        self.connection = connection
        connection.writer.write(f"GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        status, _, fields = await connection.head()
        assert status == 200 and fields.get("transfer-encoding") == "chunked", (status, fields)
        text = b""
        reader = connection.reader
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                return
            text += await reader.readexactly(size)
            await reader.readexactly(2)
            *events, text = text.split(b"\n\n")
            for event in events:
                for line in event.split(b"\n"):
                    if line.startswith(b"data:"):
                        self.heard(json.loads(line[5:]))

    def close(self):
        self.connection.close()


class Device:
    """Reports at `hz` from `start` until `stop`; `made[seq]` is when each was made."""

    def __init__(self, session, hz):
        self.session, self.hz = session, hz
        self.queue = []
        self.made = {}
        self.sent = 0
        self.wake = asyncio.Event()

    async def make_reports(self, start, stop):
        seq = 0
        due = start
        while due < stop:
            await asyncio.sleep(max(0, due - time.monotonic()))
            seq += 1
            self.made[seq] = time.monotonic()
            self.queue.append(report(seq))
            self.wake.set()
            due += 1 / self.hz

    async def send_all(self, stop):
        """Sends the queue until `stop`, as `send_queued` allows."""
        while time.monotonic() < stop or self.queue:
            if not self.queue:
                self.wake.clear()
                try:
                    await asyncio.wait_for(self.wake.wait(), max(0.001, stop - time.monotonic()))
                except TimeoutError:
                    continue
            await self.send_queued()

    async def run(self, start, stop):
        await asyncio.gather(self.make_reports(start, stop), self.send_all(stop + 1))


class HTTPDevice(Device):
    """POST …/scroll, a batch per request, 50 ms apart; an event stream beside."""

    async def open(self, host, port, on_state=None):
        self.connection = await HTTPConnection(host, port).open()
        self.stream = EventStream(on_state)
        self.stream_task = asyncio.create_task(self.stream.run(host, port, self.session))
        await self.stream.opened.wait()
        self.last_start = None
        return self

    async def send_queued(self):
        if self.last_start is not None:
            await asyncio.sleep(max(0, self.last_start + PACING - time.monotonic()))
        batch, self.queue = self.queue, []
        self.last_start = time.monotonic()
        status, data = await self.connection.request("POST", f"/v1/sessions/{self.session}/scroll", body(batch))
        assert status == 200, (status, data)
        self.sent += len(batch)

    def close(self):
        self.connection.close()
        self.stream.close()
        self.stream_task.cancel()


class SocketDevice(Device, Follower):
    """Scroll messages with an id on `…/socket`, one answered before the next."""

    def __init__(self, session, hz):
        Device.__init__(self, session, hz)
        Follower.__init__(self)

    async def open(self, host, port, on_state=None):
        self.on_state = on_state or self.on_state
        self.socket = await connect(f"ws://{host}:{port}/v1/sessions/{self.session}/socket", compression=None,
                                    max_queue=None)
        self.answered = None
        self.reading = asyncio.create_task(self.read())
        await self.opened.wait()
        return self

    async def read(self):
        async for text in self.socket:
            message = json.loads(text)
            if message["type"] == "state":
                self.heard(message["state"])
            elif message["type"] == "answer":
                assert "problem" not in message, message
                self.answered.set_result(None)

    async def send_queued(self):
        batch, self.queue = self.queue, []
        self.answered = asyncio.get_running_loop().create_future()
        await self.socket.send(json.dumps({"type": "scroll", "id": str(batch[-1]["seq"]), "body": body(batch)},
                                          separators=(",", ":")))
        await self.answered
        self.sent += len(batch)

    async def close(self):
        await self.socket.close()
        self.reading.cancel()


async def open_device(kind, host, port, session, hz, on_state=None):
    device = kind(session, hz)
    return await device.open(host, port, on_state)


async def close_device(device):
    closed = device.close()
    if closed is not None:
        await closed
