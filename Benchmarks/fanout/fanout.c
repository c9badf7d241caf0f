/*
 * fanout.c - Server-Sent Events fan-out benchmark client for TopChrome.
 *
 * Question answered: when one session has N open event streams and its state
 * changes once, how long until every one of the N watchers has the new event?
 *
 * What it does, in one thread with epoll and non-blocking sockets:
 *   1. creates a session (POST /v1/sessions) on a keep-alive "control"
 *      connection and reads the server's VmRSS (/proc/PID/status);
 *   2. opens N watchers (GET /v1/sessions/ID/events), at most -c of them
 *      connecting at a time so the listen backlog never overflows (an
 *      overflow costs a 1 s SYN retransmit and would only measure the kernel);
 *   3. waits until every watcher has its initial state, waits -s ms for the
 *      server to settle, reads VmRSS again: (with - before) / N = memory per
 *      watcher;
 *   4. R rounds: PUT /v1/sessions/ID/inset on the control connection (the
 *      inset alternates, so every PUT really changes the state and bumps the
 *      version by exactly one), t0 = CLOCK_MONOTONIC just before write();
 *      each watcher's latency = time of the epoll_wait() return in which its
 *      `id: <expected version>` line completed, minus t0. Stamping the epoll
 *      return (not each read) keeps this client's own serial read() cost out
 *      of the figure as far as a single thread can; what is left is bounded
 *      by one batch's processing time and is part of what is measured.
 *   5. prints p50/p99/max per round, then a RESULT line (median over rounds of
 *      the per-round p50 and p99, worst p99, worst max, memory, and the CPU
 *      both processes used per change: on 2 shared cores the client's share
 *      competes with the server and belongs next to the latencies) for the script.
 *
 * Parsing: only `id: <version>.<tag>` lines matter. A tiny per-watcher state
 * machine scans every byte for "\nid: " followed by digits and "." or "\n", so a
 * marker split across two reads is still found. HTTP chunk framing is not
 * decoded: the server writes each event with one write (one chunk), and the
 * framing ("\r\n<hex>\r\n") can never look like "\nid: ". A watcher whose
 * event never matches shows up as missing, which fails the run.
 *
 * Anything wrong (a refused watcher, a closed stream, a wrong or skipped
 * version, an event that never arrives within -t ms) ends the run with a
 * message and a non-zero exit status: this is a benchmark, but figures from a
 * run that lost events would be meaningless.
 *
 * Replicas: with -w PORT,PORT..., the watchers are spread round-robin over
 * those ports (other replicas of one service sharing a Redis store), while
 * the session is created and changed through -p. The RESULT line then also
 * gives p50/p99 over the watchers that are NOT on -p (remote_p50_ms,
 * remote_p99_ms): a change made on one replica, seen on another.
 *
 * Only 127.0.0.1 is ever contacted.
 *
 * Build: gcc -O2 -std=gnu11 -Wall -Wextra -o fanout fanout.c measure.c control.c figures.c
 * Usage: fanout -p PORT -n N [-w PORT,PORT...] [-r ROUNDS] [-P SERVER_PID]
 *               [-c CONNECTING] [-g GAP_MS] [-s SETTLE_MS] [-t TIMEOUT_MS] [-v]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "fanout.h"

#define MAX_EVENTS 4096
#define CONTROL UINT32_MAX /* epoll tag of the control connection */

enum { W_CONNECTING, W_STATUS, W_STREAMING };

/* One event stream. Kept small: 5,000 of them are scanned byte by byte. */
struct watcher {
    int fd;
    uint8_t state;
    uint8_t matched;   /* bytes of "\nid: " matched so far */
    uint8_t ndigits;   /* digits of the id seen so far (0 = none yet) */
    uint8_t nstatus;   /* bytes of the status line kept so far */
    char status[12];   /* "HTTP/1.1 200" */
    uint64_t digits;   /* the id being read */
    uint64_t version;  /* last complete id seen; 0 = none yet */
    uint8_t remote;    /* connected to a -w port other than -p */
};

static const char MARKER[] = "\nid: ";
#define MARKER_LEN 5

int port;
static int n_watchers, rounds = 20, max_connecting = 256;
static int gap_ms = 100, settle_ms = 500, timeout_ms = 10000, verbose;
long server_pid;
#define MAX_WATCH_PORTS 16
static int watch_ports[MAX_WATCH_PORTS], n_watch_ports;
char session_id[64];

static struct watcher *watchers;
static int ready;                 /* watchers with their initial state */
static int connecting;            /* opened, initial state not yet seen */
uint64_t initial_version;  /* the version every new watcher must see */
static uint64_t expected;         /* the version of the running round; 0 = none */
static int64_t t0;                /* when this round's PUT was written */
static int64_t *latencies;        /* this round's, one per watcher, ns */
static int received;              /* watchers that have this round's event */
static int64_t *remote_latencies; /* this round's, of the remote watchers only */
static int remote_received, n_remote;


/* ---- watchers ---- */

static char watch_request[256];
static int watch_request_len;

static void on_version(int i, uint64_t version, int64_t ts)
{
    struct watcher *w = &watchers[i];
    if (w->version == 0) { /* the initial state */
        if (version != initial_version)
            die("watcher %d: initial id %llu, expected %llu", i, (unsigned long long)version,
                (unsigned long long)initial_version);
        w->version = version;
        ready++;
        connecting--;
        return;
    }
    if (expected == 0 || version != expected || w->version != expected - 1)
        die("watcher %d: got id %llu after %llu, while round expects %llu (skipped, repeated or unasked event)",
            i, (unsigned long long)version, (unsigned long long)w->version, (unsigned long long)expected);
    w->version = version;
    latencies[received++] = ts - t0;
    if (w->remote) remote_latencies[remote_received++] = ts - t0;
}

/* Scans bytes for "\nid: <digits>\n" or "\nid: <digits>.<tag>\n" (an event
 * id names the state by version and tag; only the version counts here);
 * state survives across reads. */
static void scan(int i, const char *buf, ssize_t len, int64_t ts)
{
    struct watcher *w = &watchers[i];
    for (ssize_t k = 0; k < len; k++) {
        char c = buf[k];
        if (w->matched < MARKER_LEN) {
            if (c == MARKER[w->matched]) w->matched++;
            else w->matched = (c == '\n');
            continue;
        }
        if (c >= '0' && c <= '9' && w->ndigits < 19) {
            w->digits = w->digits * 10 + (uint64_t)(c - '0');
            w->ndigits++;
            continue;
        }
        if ((c == '\n' || c == '.') && w->ndigits > 0) on_version(i, w->digits, ts);
        w->matched = (c == '\n'); /* this '\n' may start the next marker */
        w->ndigits = 0;
        w->digits = 0;
    }
}

static int epoll_fd;

static void open_watcher(int i)
{
    struct watcher *w = &watchers[i];
    memset(w, 0, sizeof *w);
    int watch_port = watch_ports[i % n_watch_ports];
    w->remote = watch_port != port;
    if (w->remote) n_remote++;
    w->fd = open_socket(watch_port);
    w->state = W_CONNECTING;
    struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)i };
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, w->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    connecting++;
}

static void on_watcher_event(int i, uint32_t events, int64_t ts)
{
    struct watcher *w = &watchers[i];
    if (w->state == W_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) die("watcher %d: connect: %s", i, strerror(err));
        if (!(events & EPOLLOUT)) return;
        /* A fresh socket's send buffer takes ~150 bytes at once. */
        if (write(w->fd, watch_request, (size_t)watch_request_len) != watch_request_len)
            die("watcher %d: sending request: %s", i, strerror(errno));
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        epoll_ctl(epoll_fd, EPOLL_CTL_MOD, w->fd, &ev);
        w->state = W_STATUS;
        return;
    }
    char buf[4096];
    ssize_t n = read(w->fd, buf, sizeof buf); /* level-triggered: the rest comes next time */
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) die("watcher %d: read: %s", i, strerror(errno));
    if (n == 0)
        die("watcher %d: server closed the stream (last id %llu, %d/%d ready)", i,
            (unsigned long long)w->version, ready, n_watchers);
    ssize_t start = 0;
    if (w->state == W_STATUS) { /* the status line must say 200 before anything counts */
        while (start < n && w->nstatus < sizeof w->status) w->status[w->nstatus++] = buf[start++];
        if (w->nstatus < sizeof w->status) return;
        if (memcmp(w->status, "HTTP/1.1 200", sizeof w->status) != 0)
            die("watcher %d refused: %.*s", i, (int)(n < 300 ? n : 300), buf);
        w->state = W_STREAMING;
    }
    scan(i, buf + start, n - start, ts);
}

/* One epoll_wait and its events; returns whether the PUT reply completed. */
static int poll_once(int wait_ms, int *put_status, char *put_body, size_t put_body_size)
{
    static struct epoll_event events[MAX_EVENTS];
    int n = epoll_wait(epoll_fd, events, MAX_EVENTS, wait_ms);
    if (n < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
    int64_t ts = now_ns(); /* every ready socket here had its data by now */
    int put_done = 0;
    for (int k = 0; k < n; k++) {
        if (events[k].data.u32 == CONTROL) {
            if (!put_body) die("unexpected data on the control connection");
            put_done |= control_read(put_status, put_body, put_body_size);
        } else {
            on_watcher_event((int)events[k].data.u32, events[k].events, ts);
        }
    }
    return put_done;
}

int main(int argc, char **argv)
{
    int opt;
    while ((opt = getopt(argc, argv, "p:n:w:r:P:c:g:s:t:v")) != -1) {
        switch (opt) {
        case 'p': port = atoi(optarg); break;
        case 'w':
            for (char *part = strtok(optarg, ","); part; part = strtok(NULL, ",")) {
                if (n_watch_ports == MAX_WATCH_PORTS) die("at most %d -w ports", MAX_WATCH_PORTS);
                watch_ports[n_watch_ports] = atoi(part);
                if (watch_ports[n_watch_ports] <= 0 || watch_ports[n_watch_ports] > 65535) die("bad -w port %s", part);
                n_watch_ports++;
            }
            break;
        case 'n': n_watchers = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'P': server_pid = atol(optarg); break;
        case 'c': max_connecting = atoi(optarg); break;
        case 'g': gap_ms = atoi(optarg); break;
        case 's': settle_ms = atoi(optarg); break;
        case 't': timeout_ms = atoi(optarg); break;
        case 'v': verbose = 1; break;
        default:
            fprintf(stderr, "usage: %s -p PORT -n N [-w PORT,PORT...] [-r ROUNDS] [-P SERVER_PID] "
                            "[-c CONNECTING] [-g GAP_MS] [-s SETTLE_MS] [-t TIMEOUT_MS] [-v]\n", argv[0]);
            return 64;
        }
    }
    if (port <= 0 || port > 65535 || n_watchers <= 0 || rounds <= 0 || max_connecting <= 0)
        die("need -p PORT, -n N > 0, -r ROUNDS > 0");
    if (n_watch_ports == 0) watch_ports[n_watch_ports++] = port;

    watchers = calloc((size_t)n_watchers, sizeof *watchers);
    latencies = calloc((size_t)n_watchers, sizeof *latencies);
    remote_latencies = calloc((size_t)n_watchers, sizeof *remote_latencies);
    double *p50s = calloc((size_t)rounds, sizeof(double)), *p99s = calloc((size_t)rounds, sizeof(double));
    double *put_ms = calloc((size_t)rounds, sizeof(double));
    double *remote_p50s = calloc((size_t)rounds, sizeof(double)), *remote_p99s = calloc((size_t)rounds, sizeof(double));
    if (!remote_latencies || !remote_p50s || !remote_p99s || !watchers || !latencies || !p50s || !p99s || !put_ms) die("out of memory");
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);

    create_session();
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = CONTROL };
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, control_fd, &ev);
    watch_request_len = snprintf(watch_request, sizeof watch_request,
                                 "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                 "Accept: text/event-stream\r\n\r\n", session_id, port);

    usleep((useconds_t)settle_ms * 1000);
    long rss_before = server_rss_kib();

    /* Open all watchers, a bounded number connecting at a time. */
    int64_t setup_start = now_ns(), setup_deadline = setup_start + 120000000000LL;
    int opened = 0;
    while (ready < n_watchers) {
        while (opened < n_watchers && connecting < max_connecting) open_watcher(opened++);
        poll_once(100, NULL, NULL, 0);
        if (now_ns() > setup_deadline)
            die("only %d of %d watchers got their initial state within 120 s", ready, n_watchers);
    }
    double setup_s = (now_ns() - setup_start) / 1e9;
    usleep((useconds_t)settle_ms * 1000);
    long rss_with = server_rss_kib();

    double worst_max = 0, worst_p99 = 0, worst_p50 = 0;
    /* CPU per change, both sides: shows how much of the 2 cores each used
     * (the quiet gaps cost next to nothing). */
    double server_cpu_start = server_cpu_ms(), own_cpu_start = own_cpu_ms();
    for (int r = 0; r < rounds; r++) {
        /* Quiet gap: drain anything stray (there should be nothing). */
        int64_t gap_end = now_ns() + (int64_t)gap_ms * 1000000;
        while (now_ns() < gap_end) poll_once(gap_ms > 0 ? 1 : 0, NULL, NULL, 0);

        expected = initial_version + (uint64_t)r + 1;
        received = 0;
        remote_received = 0;
        int len = control_put_inset(r % 2 ? 13 : 12); /* differs from the state before: a real change */
        int put_status = 0, put_done = 0;
        char put_body[1024];
        int64_t put_ns = 0;
        t0 = now_ns();
        write_all(control_fd, control_request, (size_t)len, "PUT");
        int64_t deadline = t0 + (int64_t)timeout_ms * 1000000;
        while (received < n_watchers || !put_done) {
            if (poll_once(10, &put_status, put_body, sizeof put_body)) {
                put_done = 1;
                put_ns = now_ns() - t0;
                if (put_status != 200) die("PUT answered %d: %s", put_status, put_body);
                if (json_version(put_body) != expected)
                    die("PUT made version %llu, expected %llu", (unsigned long long)json_version(put_body),
                        (unsigned long long)expected);
            }
            if (now_ns() > deadline) {
                int missing = n_watchers - received, first = -1;
                for (int i = 0; i < n_watchers && first < 0; i++)
                    if (watchers[i].version != expected) first = i;
                die("round %d: %d of %d watchers never got id %llu within %d ms (first missing: #%d, "
                    "last id %llu); PUT %s",
                    r + 1, missing, n_watchers, (unsigned long long)expected, timeout_ms, first,
                    first >= 0 ? (unsigned long long)watchers[first].version : 0ULL,
                    put_done ? "answered" : "never answered");
            }
        }
        qsort(latencies, (size_t)n_watchers, sizeof *latencies, compare_i64);
        double p50 = percentile_ms(latencies, n_watchers, 50), p99 = percentile_ms(latencies, n_watchers, 99);
        double max = latencies[n_watchers - 1] / 1e6;
        p50s[r] = p50;
        p99s[r] = p99;
        if (n_remote > 0) {
            qsort(remote_latencies, (size_t)n_remote, sizeof *remote_latencies, compare_i64);
            remote_p50s[r] = percentile_ms(remote_latencies, n_remote, 50);
            remote_p99s[r] = percentile_ms(remote_latencies, n_remote, 99);
        }
        put_ms[r] = put_ns / 1e6;
        if (max > worst_max) worst_max = max;
        if (p99 > worst_p99) worst_p99 = p99;
        if (p50 > worst_p50) worst_p50 = p50;
        if (verbose)
            printf("  round %2d: min %7.3f  p50 %7.3f  p99 %7.3f  max %7.3f ms  (PUT answered after %.3f ms)\n",
                   r + 1, latencies[0] / 1e6, p50, p99, max, put_ms[r]);
    }
    expected = 0;
    double server_cpu = server_pid > 0 ? (server_cpu_ms() - server_cpu_start) / rounds : -1;
    double own_cpu = (own_cpu_ms() - own_cpu_start) / rounds;

    double kib_per = rss_before >= 0 ? (double)(rss_with - rss_before) / n_watchers : -1;
    printf("RESULT n=%d rounds=%d p50_ms=%.3f p99_ms=%.3f p50_worst_ms=%.3f p99_worst_ms=%.3f max_ms=%.3f "
           "put_ms=%.3f rss_before_kib=%ld rss_with_kib=%ld kib_per_watcher=%.2f setup_s=%.2f "
           "server_cpu_ms_per_round=%.1f client_cpu_ms_per_round=%.1f remote=%d remote_p50_ms=%.3f remote_p99_ms=%.3f\n",
           n_watchers, rounds, median(p50s, rounds), median(p99s, rounds), worst_p50, worst_p99, worst_max,
           median(put_ms, rounds), rss_before, rss_with, kib_per, setup_s, server_cpu, own_cpu, n_remote,
           n_remote > 0 ? median(remote_p50s, rounds) : -1.0, n_remote > 0 ? median(remote_p99s, rounds) : -1.0);
    fflush(stdout);
    for (int i = 0; i < n_watchers; i++) close(watchers[i].fd);
    close(control_fd);
    return 0;
}
