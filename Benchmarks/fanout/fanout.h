/*
 * fanout.h - what fanout.c's parts share: the run's settings and session,
 * the measurements of both processes, the control connection, and the
 * figures over watchers and rounds. See fanout.c for the method.
 */
#ifndef FANOUT_H
#define FANOUT_H
#include <stddef.h>
#include <stdint.h>

extern int port;                  /* the server the session is made and changed on */
extern long server_pid;           /* for its memory and CPU; 0 = not measured */
extern char session_id[64];
extern uint64_t initial_version;  /* the version every new watcher must see */

/* measure.c: failing, clocks, the processes' memory and CPU, sockets */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
int64_t now_ns(void);
long server_rss_kib(void);
double server_cpu_ms(void);
double own_cpu_ms(void);
int open_socket(int port);
void write_all(int fd, const char *buf, size_t len, const char *what);

/* control.c: the keep-alive connection that makes and changes the session */
extern int control_fd;
extern char control_request[512];
int control_read(int *status, char *body, size_t body_size);
uint64_t json_version(const char *body);
int control_put_inset(int inset);
void create_session(void);

/* figures.c: percentiles and medians of what was measured */
int compare_i64(const void *a, const void *b);
int compare_double(const void *a, const void *b);
double percentile_ms(const int64_t *sorted, int n, double p);
double median(double *values, int n);

#endif
