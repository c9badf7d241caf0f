#!/usr/bin/env python3
"""What scripts/bench-redis.sh prints after its table of runs: each
scenario's medians, Redis's calls per read, issue 26's ratios with their
targets and the capacity model, and the A -> B latencies. Reads the files
the script wrote; its options name them (see the script's report).
"""
import argparse, re, statistics


def medians(args):
    """Each scenario's medians, and issue 12's throughput targets."""
    rows = {}
    for line in open(args.results):
        name, *fields = line.split()
        rows.setdefault(name, []).append(fields)
    def med(name, column):
        return statistics.median(float(r[column]) for r in rows[name])
    print("Medians:")
    for name in rows:
        extra = ""
        if rows[name][0][2] != "-":
            extra = (f", replica {med(name, 2):.1f} µs CPU/req, Redis {med(name, 3):.1f} µs CPU/req;"
                     f" cores: replica {med(name, 4):.0f}%, Redis {med(name, 5):.0f}%, wrk {med(name, 6):.0f}%, rest {med(name, 7):.0f}%, idle {med(name, 8):.0f}%")
        else:
            extra = f", Redis {med(name, 3):.1f} µs CPU/call"
        p99 = f", p99 {med(name, 1) / 1000:.2f} ms" if rows[name][0][1] != "-" else ""
        print(f"  {name:<18} {med(name, 0):>8.0f} req/s{p99}{extra}")
    single, cluster = med("single", 0), med("cluster", 0)
    for ceiling in [n for n in rows if n.startswith("ceiling")]:
        print(f"  one replica on one Redis / {ceiling}: {single / med(ceiling, 0):.2f}")
    top = max(med(n, 0) for n in rows if n.startswith("ceiling"))
    p99 = med("single", 1) / 1000
    print(f"Target, one Redis: >= 0.7 x ceiling (the highest, {top:.0f}/s) and p99 <= 2 ms: "
          f"{'met' if single >= 0.7 * top and p99 <= 2 else 'NOT met'} ({single / top:.2f}, p99 {p99:.2f} ms)")
    print(f"Target, cluster > one Redis: {'met' if cluster > single else 'NOT met'} ({cluster:.0f} vs {single:.0f} req/s, {cluster / single:.2f})")
    print(f"  sessions per cluster node: {args.spread}")


def reads(args):
    """Calls Redis read per read of its sockets, each scenario's median."""
    print()
    print('Redis reads (calls per read of its sockets, medians):')
    rows = {}
    for line in open(args.wire):
        name, calls, count = line.split()
        rows.setdefault(name, []).append(int(calls) / max(int(count), 1))
    for name, per_read in rows.items():
        print(f"  {name:<18} {statistics.median(per_read):6.1f} calls per read")


def ratios(args):
    """Issue 26's ratios, each with its target, and the capacity model."""
    print()
    print("Issue 26's ratios (each with its target) and the capacity model:")
    rows, order = {}, []
    for line in open(args.results):
        name, *fields = line.split()
        rows.setdefault(name, []).append(fields)
        order.append((name, fields))
    med = lambda name, column: statistics.median(float(r[column]) for r in rows[name])
    verdict = lambda ok: "met" if ok else "NOT met"
    REPLICA, REDIS, IDLE = 2, 3, 8

    # 1. Redis's CPU per call from the replica against one connection's calls 32 deep.
    single_redis = med("single", REDIS)
    flip, deep, flat = med("flip-c1-P32", REDIS), med("ceiling-c1-P32", REDIS), med("ceiling-c32-P1", REDIS)
    reads = {}
    for line in open(args.wire):
        name, calls, count = line.split()
        reads.setdefault(name, []).append(int(calls) / max(int(count), 1))
    per_read = lambda name: statistics.median(reads[name]) if name in reads else float("nan")
    print(f"  1. Redis CPU per call, replica / one connection 32 deep, every call changing its session: {single_redis:.1f} / {flip:.1f} µs"
          f" = {single_redis / flip:.2f}x (target <= 1.10x): {verdict(single_redis / flip <= 1.10)}")
    print(f"     beside it, redis-benchmark (about half its calls change their session): / -c1 -P32 ({deep:.1f} µs) {single_redis / deep:.2f}x,"
          f" / -c32 -P1 ({flat:.1f} µs) {single_redis / flat:.2f}x")
    print(f"     calls per read of Redis's sockets: replica {per_read('single'):.1f}, one connection 32 deep {per_read('flip-c1-P32'):.1f},"
          f" -c1 -P32 {per_read('ceiling-c1-P32'):.1f}, -c32 -P1 {per_read('ceiling-c32-P1'):.1f}")
    # wrk's 32 requests are never all at Redis at once (some are in wrk, some
    # in the replica): the replica writes each node what is waiting when it
    # writes. The same calls written that deep show what the replica's own
    # calls cost Redis beyond their depth.
    at_depth = args.at_depth
    depth_redis = med(at_depth, REDIS)
    print(f"  1'. Redis CPU per call, replica / one connection as deep as the replica's calls arrive ({at_depth.removeprefix('flip-depth-P')} a read):"
          f" {single_redis:.1f} / {depth_redis:.1f} µs = {single_redis / depth_redis:.2f}x (target <= 1.10x, as 1.): {verdict(single_redis / depth_redis <= 1.10)};"
          f" calls per read {per_read(at_depth):.1f}")

    # 2. The replica's cost per scroll on Redis against the memory store.
    text = open(args.instructions).read()
    counted = re.search(r"^redis/memory scroll: ([\d.]+)x", text, re.M)
    per_store = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(memory|redis)\s+scroll\s+\d+\s+\d+\s+\d+\s+(\d+)", text, re.M)}
    if counted:
        ratio = float(counted.group(1))
        print(f"  2a. instructions per scroll, Redis / memory store: {per_store['redis'] / 1000:.1f} k / {per_store['memory'] / 1000:.1f} k"
              f" = {ratio:.2f}x (target <= 1.5x): {verdict(ratio <= 1.5)}")
    else:
        print("  2a. instructions per scroll: not counted (INSTRUCTIONS=0)")
    pairs, memory = [], None
    for name, fields in order:  # the alternating rounds: each Redis round against the memory round before it
        if name == "memory": memory = float(fields[REPLICA])
        elif name == "single" and memory: pairs.append(float(fields[REPLICA]) / memory)
    cpu = statistics.median(pairs)
    print(f"  2b. replica CPU per request, Redis / memory store: {med('single', REPLICA):.1f} / {med('memory', REPLICA):.1f} µs,"
          f" median of {len(pairs)} alternating rounds {cpu:.2f}x (target <= 1.5x): {verdict(cpu <= 1.5)}")

    # 3. The machine kept busy: idle as a share of the whole machine (the
    # table's columns are shares of one core).
    idle = med("single", IDLE) / args.cores
    print(f"  3. machine idle during wrk -c32 on one replica and one Redis: {idle:.0f}% of the machine (target <= 10%): {verdict(idle <= 10)}")

    # The floor: any server on libmicrohttpd suspends a request whose answer
    # comes later and resumes it from another thread. Where the C server's own
    # ratio is above a target, the nearest target is 1.5 x that ratio (idle:
    # the C server's, 5 points over), compared within bench-floor's rounds.
    floor = open(args.floor).read()
    number = lambda pattern: float(re.search(pattern, floor).group(1))
    print("  libmicrohttpd's floor (scripts/bench-floor.sh, the same wrk, TopChrome and a C server on the same library in alternating rounds):")
    for line in floor.splitlines():
        if line.startswith("  "): print("   " + line)
    cpu_top, cpu_floor = number(r"TopChrome Redis / memory store: ([\d.]+)x"), number(r"C floor one Redis / inline: ([\d.]+)x")
    print(f"  2b'. CPU per request, Redis / memory store, against 1.5 x the floor's {cpu_floor:.2f}x = {1.5 * cpu_floor:.2f}x:"
          f" {cpu_top:.2f}x: {verdict(cpu_top <= 1.5 * cpu_floor)}")
    if counted and re.search(r"C floor \(callgrind", floor):
        count_floor = number(r"one Redis [\d.]+ k = ([\d.]+)x")
        print(f"  2a'. instructions per scroll, Redis / memory store, against 1.5 x the floor's {count_floor:.2f}x = {1.5 * count_floor:.2f}x:"
              f" {ratio:.2f}x: {verdict(ratio <= 1.5 * count_floor)}")
    idle_top, idle_floor = number(r"TopChrome Redis (\d+)%"), number(r"C floor one Redis (\d+)%")
    print(f"  3'. machine idle against the C floor's on one Redis ({idle_floor:.0f}%) plus 5 points: {idle_top:.0f}%: {verdict(idle_top <= idle_floor + 5)}")

    # 4. A cluster: Redis CPU per call summed over the primaries, and the calls' spread.
    cluster_redis = med("cluster", REDIS)
    calls = [int(n) for n in args.replica_calls.split()]
    mean = sum(calls) / len(calls)
    spread = max(abs(c - mean) for c in calls) / mean
    print(f"  4. cluster: Redis CPU per call over the primaries / one Redis: {cluster_redis:.1f} / {single_redis:.1f} µs"
          f" = {cluster_redis / single_redis:.2f}x (target <= 1.2x): {verdict(cluster_redis / single_redis <= 1.2)};"
          f" calls per primary {'/'.join(map(str, calls))}, widest off the mean {spread * 100:.1f}% (target <= 10%): {verdict(spread <= 0.10)}"
          f" (the replica's {sum(map(int, args.spread.split('/')))} sessions per primary: {args.spread})")
    # The cluster's own ceiling: the same calls in flight, split over the
    # primaries, each primary's share written at once. The nearest target: the
    # replica's calls on the cluster against that ceiling, with the allowance
    # target 1 gives one Redis; each cluster round against the ceiling's round
    # after it, as the rounds alternate.
    flip_cluster = med(args.flip_cluster, REDIS)
    primaries, depth = args.flip_cluster.removeprefix("flip-cluster-").split("x")
    rounds, replica_round = [], None
    for name, fields in order:
        if name == "cluster": replica_round = float(fields[REDIS])
        elif name == args.flip_cluster and replica_round: rounds.append(replica_round / float(fields[REDIS]))
    against = statistics.median(rounds)
    print(f"     the cluster's ceiling: one connection per primary, {depth} deep (wrk's requests in flight split over the {primaries} primaries),"
          f" every call flipping its session: Redis {flip_cluster:.1f} µs per call, {flip_cluster / flip:.2f}x one connection 32 deep on one Redis;"
          f" calls per read {per_read(args.flip_cluster):.1f}, the replica's {per_read('cluster'):.1f}")
    print(f"  4'. cluster: Redis CPU per call, replica / the cluster's ceiling: {cluster_redis:.1f} / {flip_cluster:.1f} µs,"
          f" median of {len(rounds)} alternating rounds {against:.2f}x (rounds {', '.join(f'{r:.2f}' for r in rounds)};"
          f" target <= 1.10x, as 1. for one Redis): {verdict(against <= 1.10)}")
    # Each primary reads what arrives from its share of the requests in
    # flight, as deep as they come: the same replica on one Redis with that
    # share is the cluster's cost per call at the same load per node.
    shared = args.shared
    shared_redis = med(shared, REDIS)
    print(f"  4''. cluster: Redis CPU per call over the primaries / one Redis at each primary's share of the requests in flight"
          f" (wrk -c{shared.removeprefix('single-c')}): {cluster_redis:.1f} / {shared_redis:.1f} µs = {cluster_redis / shared_redis:.2f}x"
          f" (target <= 1.2x, as 4.): {verdict(cluster_redis / shared_redis <= 1.2)}; calls per read: cluster {per_read('cluster'):.1f},"
          f" one Redis at that share {per_read(shared):.1f}, at wrk -c32 {per_read('single'):.1f}")

    # 5. The capacity model: a core's worth of requests, from the CPU each costs.
    print("  5. capacity model (from the medians' CPU per request; a core = one busy CPU of this machine):")
    print(f"     {'deployment':<28} {'replica req/s/core':>18} {'Redis req/s/core':>16} {'100k/s: replica, Redis cores':>29} {'1M/s: replica, Redis cores':>27}")
    for name, label in (("memory", "memory store"), ("single", "one Redis"), ("cluster", "3-primary cluster")):
        replica_us, redis_us = med(name, REPLICA), med(name, REDIS)
        replica_rate = 1e6 / replica_us
        redis_rate = 1e6 / redis_us if redis_us > 0 else None
        cores = lambda rate, us: f"{rate * us / 1e6:.1f}" if us > 0 else "-"
        print(f"     {label:<28} {replica_rate:>18.0f} {(f'{redis_rate:.0f}' if redis_rate else '-'):>16}"
              f" {cores(1e5, replica_us) + ', ' + cores(1e5, redis_us):>29} {cores(1e6, replica_us) + ', ' + cores(1e6, redis_us):>27}")
    print("     (Redis runs commands on one thread: a Redis node gives one core at most; the cores beyond one are primaries of a cluster)")


def latencies(args):
    """A change on A seen on B: 1 watcher, then 1,000 over A and B."""
    one = sorted(float(line) for line in open(args.one_watcher))
    rank = lambda p: one[max(0, -(-len(one) * p // 100) - 1)]  # nearest rank
    print(f"      1 watcher on B, {len(one)} changes made on A: p50 {rank(50):.2f} ms, p99 {rank(99):.2f} ms, max {one[-1]:.2f} ms;"
          f" target p99 <= 5 ms: {'met' if rank(99) <= 5 else 'NOT met'}")
    rows = [dict(re.findall(r"(\w+)=([-\d.]+)", line)) for line in open(args.fanout_rows) if " n=1 " not in line]
    for n in sorted({int(r["n"]) for r in rows}):
        mine = [r for r in rows if int(r["n"]) == n]
        med = lambda k: statistics.median(float(r[k]) for r in mine)
        target, p99 = (5 if n == 1 else 25), med("p99_ms")
        runs = " ".join(r["p99_ms"] for r in mine)
        print(f"  {n:>5} watchers: p50 {med('p50_ms'):.2f} ms, p99 {p99:.2f} ms (runs: {runs}; worst change's p99 {max(float(r['p99_worst_ms']) for r in mine):.2f} ms);"
              f" of those on B ({mine[0]['remote']}): p50 {med('remote_p50_ms'):.2f}, p99 {med('remote_p99_ms'):.2f} ms;"
              f" PUT on A answered after {med('put_ms'):.2f} ms; target p99 <= {target} ms: {'met' if p99 <= target else 'NOT met'}")



def main():
    options = argparse.ArgumentParser(description=__doc__)
    for name in ("results", "wire", "instructions", "replica-calls", "flip-cluster", "floor", "spread", "shared",
                 "at-depth", "fanout-rows", "one-watcher"):
        options.add_argument("--" + name, required=True)
    options.add_argument("--cores", type=int, required=True)
    options.add_argument("--rounds", type=int, required=True)
    args = options.parse_args()
    medians(args)
    reads(args)
    ratios(args)
    print()
    print(f"Change on A -> event on B (1,000 watchers: {args.rounds} changes per run; p50/p99 over the watchers per change,"
          " median over changes, then over runs):")
    latencies(args)


if __name__ == "__main__":
    main()
