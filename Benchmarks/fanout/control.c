/*
 * control.c - the control connection: a tiny HTTP/1.1 client for Content-Length replies that makes and changes the session (see fanout.c).
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

int control_fd;
static char control_buf[16384];
static size_t control_len;

/* If control_buf holds a whole response: its status, and its body copied
 * (NUL-terminated) into body; consumes it and returns 1. Else 0. */
static int control_response(int *status, char *body, size_t body_size)
{
    control_buf[control_len] = '\0';
    char *end = strstr(control_buf, "\r\n\r\n");
    if (!end) return 0;
    size_t header_len = (size_t)(end - control_buf) + 4, content_length = 0;
    for (char *p = control_buf; p && p < end; p = strstr(p, "\r\n"), p = p ? p + 2 : p)
        if (strncasecmp(p, "content-length:", 15) == 0) content_length = strtoul(p + 15, NULL, 10);
    if (control_len < header_len + content_length) return 0;
    if (sscanf(control_buf, "HTTP/1.%*d %d", status) != 1) die("bad control reply: %.80s", control_buf);
    size_t copy = content_length < body_size - 1 ? content_length : body_size - 1;
    memcpy(body, control_buf + header_len, copy);
    body[copy] = '\0';
    control_len -= header_len + content_length;
    memmove(control_buf, control_buf + header_len + content_length, control_len);
    return 1;
}

/* Reads what the control socket has; returns whether a response is complete. */
int control_read(int *status, char *body, size_t body_size)
{
    for (;;) {
        if (control_len >= sizeof control_buf - 1) die("control reply too large");
        ssize_t n = read(control_fd, control_buf + control_len, sizeof control_buf - 1 - control_len);
        if (n > 0) { control_len += (size_t)n; continue; }
        if (n == 0) die("server closed the control connection");
        if (errno == EAGAIN) break;
        if (errno != EINTR) die("control read: %s", strerror(errno));
    }
    return control_response(status, body, body_size);
}

uint64_t json_version(const char *body)
{
    const char *v = strstr(body, "\"version\":");
    if (!v) die("no version in reply: %.200s", body);
    return strtoull(v + 10, NULL, 10);
}

char control_request[512];

int control_put_inset(int inset)
{
    char json[32];
    int body_len = snprintf(json, sizeof json, "{\"inset\": %d}", inset);
    return snprintf(control_request, sizeof control_request,
                    "PUT /v1/sessions/%s/inset HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                    session_id, port, body_len, json);
}

/* Creates the session, blocking (poll-free busy loop is fine: once, at start). */
void create_session(void)
{
    control_fd = open_socket(port);
    int len = snprintf(control_request, sizeof control_request,
                       "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                       "Content-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"inset\": 0}",
                       port);
    int64_t deadline = now_ns() + 5000000000LL;
    for (;;) { /* wait for the connection */
        ssize_t n = write(control_fd, control_request, (size_t)len);
        if (n == len) break;
        if (n >= 0 || (errno != EAGAIN && errno != ENOTCONN)) die("sending POST: %s", strerror(errno));
        if (now_ns() > deadline) die("cannot connect to 127.0.0.1:%d", port);
        usleep(1000);
    }
    int status;
    char body[1024];
    while (!control_read(&status, body, sizeof body)) {
        if (now_ns() > deadline) die("no reply to POST /v1/sessions");
        usleep(1000);
    }
    if (status != 201) die("POST /v1/sessions answered %d: %s", status, body);
    const char *id = strstr(body, "\"id\":\"");
    if (!id || sscanf(id + 6, "%63[0-9a-f]", session_id) != 1) die("no id in %s", body);
    initial_version = json_version(body);
}
