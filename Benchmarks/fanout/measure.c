/*
 * measure.c - failing, clocks, the server's and this client's memory and CPU, loopback sockets (see fanout.c).
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

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fanout: FAILED: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* VmRSS of the server in KiB, or -1 without a pid. */
long server_rss_kib(void)
{
    if (server_pid <= 0) return -1;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", server_pid);
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read %s (server gone?)", path);
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

/* CPU time (user + system) the server has used, in ms (clock-tick resolution), or -1. */
double server_cpu_ms(void)
{
    if (server_pid <= 0) return -1;
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", server_pid);
    FILE *f = fopen(path, "r");
    if (!f) die("cannot read %s (server gone?)", path);
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    unsigned long utime, stime;
    const char *after_name = strrchr(text, ')'); /* the command name may hold spaces */
    if (!after_name || sscanf(after_name + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                              &utime, &stime) != 2)
        die("cannot parse %s", path);
    return (utime + stime) * 1000.0 / sysconf(_SC_CLK_TCK);
}

/* This process's CPU time (user + system), in ms. */
double own_cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int open_socket(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket: %s (raise ulimit -n?)", strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* 127.0.0.1 only */
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS)
        die("connect: %s", strerror(errno));
    return fd;
}

void write_all(int fd, const char *buf, size_t len, const char *what)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die("writing %s: %s", what, n < 0 ? strerror(errno) : "short write");
        buf += n;
        len -= (size_t)n;
    }
}
