"""scripts/bench-socket.sh's measurements (its header says what and how):
python bench_socket.py SERVER_BINARY. Settings from the environment.
Takes about 10 min with the defaults."""
import asyncio
import os
import random
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Tests", "scripts"))
sys.path.insert(0, HERE)
from devices import HTTPDevice, SocketDevice, close_device, create_sessions, open_device  # noqa: E402
from live_server import start_server, stop_server  # noqa: E402

BINARY = sys.argv[1]
ROUNDS = int(os.environ.get("ROUNDS", 3))
ONE_SECONDS = float(os.environ.get("ONE_SECONDS", 30))
DEVICES = int(os.environ.get("DEVICES", 1000))
DEVICE_HZ = float(os.environ.get("DEVICE_HZ", 2))
MANY_SECONDS = float(os.environ.get("MANY_SECONDS", 15))
LATENCY_SECONDS = float(os.environ.get("LATENCY_SECONDS", 20))
IDLE = int(os.environ.get("IDLE", 1000))
IDLE_SECONDS = 3
TICKS = os.sysconf("SC_CLK_TCK")
KINDS = {"HTTP": HTTPDevice, "socket": SocketDevice}

# Each device holds two descriptors over HTTP; the server as many, plus its own.
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
LIMITS = ["--log-level", "warn", "--max-connections", str(4 * max(DEVICES, IDLE) + 100),
          "--max-connections-per-ip", "0", "--max-watchers", str(2 * max(DEVICES, IDLE) + 100)]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def address(url):
    host, port = url.split("//")[1].split(":")
    return host, int(port)


def orders(rounds):
    """ABBA: each round swaps which transport goes first."""
    return [list(KINDS) if round % 2 == 0 else list(reversed(KINDS)) for round in range(rounds)]


async def cpu_per_report(server, url, count, hz, seconds):
    """Server CPU µs per report sent by `count` devices at `hz` for `seconds`, per transport and round."""
    host, port = address(url)
    sessions = await create_sessions(host, port, count)
    figures = {kind: [] for kind in KINDS}
    beyond_idle = {kind: [] for kind in KINDS}
    rates = {kind: [] for kind in KINDS}
    for order in orders(ROUNDS):
        for kind in order:
            devices = [await open_device(KINDS[kind], host, port, session, hz) for session in sessions]
            await asyncio.sleep(0.5)  # the opening's work out of the count
            # What the open devices cost with no report (sweeps, timers, the loops' waits).
            before = cpu_seconds(server.pid)
            await asyncio.sleep(IDLE_SECONDS)
            idle = (cpu_seconds(server.pid) - before) / IDLE_SECONDS
            begin = time.monotonic() + 0.2
            # Devices start at random phases within one period, as unsynchronised phones do.
            runs = [device.run(begin + random.random() / hz, begin + seconds) for device in devices]
            before = cpu_seconds(server.pid)
            await asyncio.gather(*runs)
            used = cpu_seconds(server.pid) - before
            sent = sum(device.sent for device in devices)
            figures[kind].append(used / sent * 1e6)
            beyond_idle[kind].append((used - idle * seconds) / sent * 1e6)
            rates[kind].append(sent / seconds)
            for device in devices:
                await close_device(device)
    return figures, beyond_idle, rates


async def latency(url, seconds):
    """Report on A -> state on B, in ms, per transport: every report's, pooled over the rounds."""
    host, port = address(url)
    delays = {kind: [] for kind in KINDS}
    for order in orders(ROUNDS):
        for kind in order:
            session, = await create_sessions(host, port, 1)
            a = await open_device(KINDS[kind], host, port, session, 120)
            seen = [0]

            def on_state(seq, kind=kind, a=a):
                now = time.monotonic()
                for k in range(seen[0] + 1, seq + 1):
                    delays[kind].append((now - a.made[k]) * 1e3)
                seen[0] = max(seen[0], seq)

            # B only follows: as a device at rest, its event stream or its socket.
            b = await open_device(KINDS[kind], host, port, session, 120, on_state)
            begin = time.monotonic() + 0.2
            await a.run(begin, begin + seconds)
            deadline = time.monotonic() + 10
            while seen[0] < a.sent:
                assert time.monotonic() < deadline, f"{kind}: B heard report {seen[0]} of {a.sent}"
                await asyncio.sleep(0.01)
            await close_device(a)
            await close_device(b)
    return delays


async def memory_per_watcher(count):
    """VmRSS growth per open idle watcher, a fresh server each round, bytes."""
    growth = {kind: [] for kind in KINDS}
    for order in orders(ROUNDS):
        for kind in order:
            server, url = start_server(BINARY, *LIMITS, "--heartbeat", "3600")
            try:
                host, port = address(url)
                sessions = await create_sessions(host, port, count)
                await asyncio.sleep(0.3)
                before = rss_bytes(server.pid)
                devices = [await open_device(KINDS[kind], host, port, session, 1) for session in sessions]
                await asyncio.sleep(0.3)
                growth[kind].append((rss_bytes(server.pid) - before) / count)
                for device in devices:
                    await close_device(device)
            finally:
                stop_server(server)
    return growth


def spread(values, unit):
    values = sorted(values)
    return f"{statistics.median(values):.1f} {unit} ({values[0]:.1f}–{values[-1]:.1f})"


async def main():
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {os.cpu_count()} cores, {ROUNDS} rounds, ABBA")
    server, url = start_server(BINARY, *LIMITS)
    try:
        rows = []
        for name, count, hz, seconds in [("1 device at 120 Hz", 1, 120, ONE_SECONDS),
                                         (f"{DEVICES} devices at {DEVICE_HZ:g} Hz", DEVICES, DEVICE_HZ, MANY_SECONDS)]:
            figures, beyond_idle, rates = await cpu_per_report(server, url, count, hz, seconds)
            for label, values in [("", figures), (", less idle", beyond_idle)]:
                ratio = statistics.median(values["socket"]) / statistics.median(values["HTTP"])
                rows.append((f"server CPU per report{label}, {name}",
                             spread(values["HTTP"], "µs"), spread(values["socket"], "µs"), f"{ratio:.2f}"))
            rows.append((f"  reports sent a second, {name}", spread(rates["HTTP"], "/s"), spread(rates["socket"], "/s"), ""))
        delays = await latency(url, LATENCY_SECONDS)
        for q, name in [(50, "p50"), (99, "p99")]:
            cut = {kind: statistics.quantiles(delays[kind], n=100)[q - 1] for kind in KINDS}
            rows.append((f"report on A -> state on B, {name}", f"{cut['HTTP']:.2f} ms", f"{cut['socket']:.2f} ms",
                         f"{cut['socket'] / cut['HTTP']:.2f}"))
    finally:
        stop_server(server)
    growth = await memory_per_watcher(IDLE)
    rows.append((f"memory per open idle watcher ({IDLE})", spread([g / 1024 for g in growth["HTTP"]], "KiB"),
                 spread([g / 1024 for g in growth["socket"]], "KiB"),
                 f"{statistics.median(growth['socket']) / statistics.median(growth['HTTP']):.2f}"))
    print(f"{'measure':60} {'HTTP (+ event stream)':>26} {'WebSocket':>26} {'ratio':>6}")
    for row in rows:
        print(f"{row[0]:60} {row[1]:>26} {row[2]:>26} {row[3]:>6}")
    print("(medians of the rounds, range in brackets; ratio = WebSocket / HTTP of the medians;"
          " latency over every report of every round)")


asyncio.run(main())
