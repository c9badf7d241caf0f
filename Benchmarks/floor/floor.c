/*
 * floor.c - what answering later costs a libmicrohttpd server, in C.
 *
 * Question answered: how much more CPU per request does a server on
 * libmicrohttpd 0.9.75 spend when its store answers on another thread
 * (Redis) than when it answers in the request's own callback (memory)?
 * TopChrome's Redis mode pays that on every request; this program pays it
 * with nothing else around it, so the ratio it shows is a floor no Swift
 * code on the same library can go under.
 *
 * One server, the flags TopChrome's uses (epoll worker threads, suspend and
 * resume, 8 KiB of connection memory), answering POST .../scroll (and any
 * other request but POST /v1/sessions, which makes an id) with a fixed
 * ~80-byte JSON state, in one of three modes (for POST .../scroll; the
 * others are answered at once):
 *
 *   inline  answered in the access callback, as the memory store is;
 *   later   suspended, handed to a "store" thread (a list under a mutex and
 *           a wake-up pipe written only when the thread sleeps, as
 *           TopChrome's Redis connection does) which resumes it at once;
 *   redis   the same, but the store thread first calls TopChrome's own
 *           library function `apply` once per request, pipelined, over one
 *           non-blocking hiredis connection (calls waiting leave in one
 *           write; replies are read as they come, into hiredis's own reply
 *           objects) and resumes each request once its reply is read. The
 *           call is the one TopChrome makes for a scroll report (the
 *           offset and seq from the body, a fresh tag), so Redis does the
 *           same work for either server and takes the same share of the
 *           machine. Commands are encoded here by hand, as TopChrome writes
 *           its own, not by hiredis's format parser. POST
 *           /v1/sessions creates the session in Redis (`create`, over a
 *           blocking connection of its own) before answering.
 *
 * Usage: floor MODE PORT [THREADS=2] [REDIS_PORT LIBRARY]
 * LIBRARY: the name the library was loaded under (its functions are LIBRARY_apply, LIBRARY_create).
 * It prints nothing while serving; stop it with SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { INLINE, LATER, REDIS };

static enum mode mode;
static redisContext *redis;
static const char *library;
/* POST /v1/sessions's own connection to Redis, for `create`; one caller at a time. */
static redisContext *creator;
static pthread_mutex_t creator_lock = PTHREAD_MUTEX_INITIALIZER;
/* A 2100-01-01 deadline in ms: the function reads TIME for it, as for TopChrome's calls. */
static const char deadline[] = "4102444800000";

/* One request: its body, and where it stands. */
struct request {
  struct MHD_Connection *connection;
  struct request *next;
  int answered;      /* the store thread has resumed it */
  char id[40];       /* the session id from the path */
  char body[128];    /* the start of the body (a scroll report) */
  size_t body_len;
};

/* Requests handed to the store thread, oldest first. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct request *queue_head, *queue_tail;
static int wake_requested;
static int wake_pipe[2];

/* Requests sent to Redis, oldest first (the store thread's alone). */
static struct request *sent_head, *sent_tail;

static const char state_json[] =
    "{\"id\":\"00000000000000000000000000000000\",\"inset\":20,\"isRevealed\":false,\"version\":5}";
static unsigned long long sessions_made;

static enum MHD_Result answer(struct MHD_Connection *connection) {
  struct MHD_Response *response =
      MHD_create_response_from_buffer(sizeof state_json - 1, (void *)state_json, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(response, "Content-Type", "application/json");
  MHD_add_response_header(response, "ETag", "\"5.0123456789abcdef\"");
  enum MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

/* POST /v1/sessions: 201 and a fresh id, so that the benchmark scripts' session making works here too. */
static enum MHD_Result created(struct MHD_Connection *connection) {
  unsigned long long number = __atomic_add_fetch(&sessions_made, 1, __ATOMIC_RELAXED);
  if (mode == REDIS) {
    pthread_mutex_lock(&creator_lock);
    redisReply *made = redisCommand(creator, "FCALL %s_create 1 topchrome:{%032llx} %012llx %s 3600000 0", library, number,
                                    number, deadline);
    pthread_mutex_unlock(&creator_lock);
    /* nil: made in an earlier round (ids restart at 1 in every process), which serves as well. */
    if (!made || (made->type != REDIS_REPLY_ARRAY && made->type != REDIS_REPLY_NIL)) {
      fprintf(stderr, "create failed: %s\n", made && made->str ? made->str : creator->errstr);
      exit(1);
    }
    freeReplyObject(made);
  }
  char body[160];
  int length = snprintf(body, sizeof body, "{\"id\":\"%032llx\",\"inset\":0,\"isRevealed\":true,\"version\":1}", number);
  struct MHD_Response *response = MHD_create_response_from_buffer((size_t)length, body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(response, "Content-Type", "application/json");
  enum MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_CREATED, response);
  MHD_destroy_response(response);
  return queued;
}

static void hand_over(struct request *request) {
  int wake = 0;
  pthread_mutex_lock(&lock);
  request->next = NULL;
  if (queue_tail) queue_tail->next = request; else queue_head = request;
  queue_tail = request;
  if (!wake_requested) wake = wake_requested = 1;
  pthread_mutex_unlock(&lock);
  if (wake) {
    char byte = 1;
    while (write(wake_pipe[1], &byte, 1) < 0 && errno == EINTR) {}
  }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
  (void)cls; (void)version;
  struct request *request = *req_cls;
  if (!request) {
    request = calloc(1, sizeof *request);
    if (!request) return MHD_NO;
    request->connection = connection;
    const char *id = strstr(url, "/sessions/");
    if (id) {
      id += 10;
      size_t length = strcspn(id, "/");
      if (length >= sizeof request->id) length = sizeof request->id - 1;
      memcpy(request->id, id, length);
    }
    *req_cls = request;
    return MHD_YES;
  }
  if (*upload_data_size) {
    size_t room = sizeof request->body - 1 - request->body_len;
    size_t take = *upload_data_size < room ? *upload_data_size : room;
    memcpy(request->body + request->body_len, upload_data, take);
    request->body_len += take;
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (!strcmp(url, "/v1/sessions") && !strcmp(method, "POST")) return created(connection);
  /* Only a report about a session goes to the store; anything else (a readiness probe) is answered at once. */
  if (mode == INLINE || request->answered || strcmp(method, "POST") || !request->id[0]) return answer(connection);
  MHD_suspend_connection(connection);
  hand_over(request);
  return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                         enum MHD_RequestTerminationCode code) {
  (void)cls; (void)connection; (void)code;
  free(*req_cls);
  *req_cls = NULL;
}

static void resume(struct request *request) {
  request->answered = 1;
  MHD_resume_connection(request->connection);
}

/* The number after "NAME": in the body, as its text; 0 (and "") if there is none. */
static size_t field(const char *body, const char *name, char *number, size_t room) {
  const char *at = strstr(body, name);
  if (!at) { number[0] = 0; return 0; }
  at += strlen(name);
  while (*at == '"' || *at == ' ' || *at == ':') at++;
  size_t length = strspn(at, "0123456789.-eE+");
  if (length >= room) length = 0;
  memcpy(number, at, length);
  number[length] = 0;
  return length;
}

/* What every call of apply repeats, encoded once (connect_redis): from
 * FCALL to the key; from the deadline to the report's form (`q` with a seq,
 * `r` without); between the offset and the seq. */
static char call_head[128], call_middle[128];
static size_t call_head_length, call_middle_length;
static const char call_between[] = "$3\r\n0.0\r\n$1\r\nv\r\n";

/* Appends LENGTH bytes of ARGUMENT as a RESP bulk string at AT; returns the end. */
static char *bulk(char *at, const char *argument, size_t length) {
  char digits[20];
  size_t count = 0, rest = length;
  do { digits[count++] = (char)('0' + rest % 10); rest /= 10; } while (rest);
  *at++ = '$';
  while (count) *at++ = digits[--count];
  *at++ = '\r'; *at++ = '\n';
  memcpy(at, argument, length);
  at += length;
  *at++ = '\r'; *at++ = '\n';
  return at;
}

/* Appends apply's call for each request taken, oldest first. */
static void send_to_redis(struct request *taken) {
  static unsigned long long tags;
  static const char hex[] = "0123456789abcdef";
  while (taken) {
    struct request *next = taken->next;
    char offset[32], seq[32], tag[12], key[64];
    size_t offset_length = field(taken->body, "\"contentOffsetY", offset, sizeof offset);
    if (!offset_length) { offset[0] = '0'; offset_length = 1; }
    size_t seq_length = field(taken->body, "\"seq", seq, sizeof seq);
    unsigned long long number = ++tags;
    for (int digit = 11; digit >= 0; digit--, number >>= 4) tag[digit] = hex[number & 15];
    size_t id_length = strlen(taken->id);
    memcpy(key, "topchrome:{", 11);
    memcpy(key + 11, taken->id, id_length);
    key[11 + id_length] = '}';
    /* Encoded here, as TopChrome encodes its calls, not by hiredis's format parser. */
    char command[512], *at = command;
    memcpy(at, seq_length ? "*14\r\n" : "*13\r\n", 5);
    memcpy(at += 5, call_head, call_head_length);
    at = bulk(at + call_head_length, key, id_length + 12);
    at = bulk(at, tag, sizeof tag);
    memcpy(at, call_middle, call_middle_length);
    at = bulk(at + call_middle_length, seq_length ? "q" : "r", 1);
    at = bulk(at, offset, offset_length);
    memcpy(at, call_between, sizeof call_between - 1);
    at += sizeof call_between - 1;
    if (seq_length) at = bulk(at, seq, seq_length);
    redisAppendFormattedCommand(redis, command, (size_t)(at - command));
    taken->next = NULL;
    if (sent_tail) sent_tail->next = taken; else sent_head = taken;
    sent_tail = taken;
    taken = next;
  }
}

static void *store_thread(void *unused) {
  (void)unused;
  for (;;) {
    struct pollfd fds[2] = {{.fd = wake_pipe[0], .events = POLLIN}};
    nfds_t count = 1;
    if (mode == REDIS) {
      fds[1].fd = redis->fd;
      fds[1].events = POLLIN | (sdslen(redis->obuf) ? POLLOUT : 0);
      count = 2;
    }
    if (poll(fds, count, -1) < 0 && errno != EINTR) { perror("poll"); exit(1); }
    if (fds[0].revents) {
      char drain[64];
      while (read(wake_pipe[0], drain, sizeof drain) > 0) {}
    }
    pthread_mutex_lock(&lock);
    struct request *taken = queue_head;
    queue_head = queue_tail = NULL;
    wake_requested = 0;
    pthread_mutex_unlock(&lock);
    if (mode == LATER) {
      while (taken) {
        struct request *next = taken->next;
        resume(taken);
        taken = next;
      }
      continue;
    }
    send_to_redis(taken);
    int done = 0;
    if (sdslen(redis->obuf) && redisBufferWrite(redis, &done) != REDIS_OK) {
      fprintf(stderr, "redis write: %s\n", redis->errstr);
      exit(1);
    }
    if (count > 1 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      if (redisBufferRead(redis) != REDIS_OK) { fprintf(stderr, "redis read: %s\n", redis->errstr); exit(1); }
      void *reply;
      while (redisGetReplyFromReader(redis, &reply) == REDIS_OK && reply) {
        redisReply *value = reply;
        if (value->type != REDIS_REPLY_ARRAY || value->elements != 8) {
          fprintf(stderr, "unexpected reply from Redis (type %d): %s\n", value->type,
                  value->type == REDIS_REPLY_ERROR ? value->str : "");
          exit(1);
        }
        freeReplyObject(reply);
        struct request *oldest = sent_head;
        if (!oldest) { fprintf(stderr, "a reply nobody asked for\n"); exit(1); }
        sent_head = oldest->next;
        if (!sent_head) sent_tail = NULL;
        resume(oldest);
      }
    }
  }
  return NULL;
}

static redisContext *connected(int port) {
  redisContext *context = redisConnect("127.0.0.1", port);
  if (!context || context->err) {
    fprintf(stderr, "cannot connect to Redis on port %d: %s\n", port, context ? context->errstr : "out of memory");
    exit(1);
  }
  return context;
}

static void connect_redis(int port) {
  redis = connected(port);
  creator = connected(port);
  call_head_length = (size_t)snprintf(call_head, sizeof call_head, "$5\r\nFCALL\r\n$%zu\r\n%s_apply\r\n$1\r\n1\r\n",
                                      strlen(library) + 6, library);
  if (call_head_length >= sizeof call_head) { fprintf(stderr, "library name too long: %s\n", library); exit(2); }
  call_middle_length = (size_t)snprintf(call_middle, sizeof call_middle,
                                        "$%zu\r\n%s\r\n$7\r\n3600000\r\n$3\r\n1.0\r\n$1\r\n0\r\n",
                                        sizeof deadline - 1, deadline);
  /* From here on the store thread's poll decides when to read and write. */
  fcntl(redis->fd, F_SETFL, fcntl(redis->fd, F_GETFL) | O_NONBLOCK);
  redis->flags &= ~REDIS_BLOCK;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s inline|later|redis PORT [THREADS=2] [REDIS_PORT LIBRARY]\n", argv[0]);
    return 2;
  }
  if (!strcmp(argv[1], "inline")) mode = INLINE;
  else if (!strcmp(argv[1], "later")) mode = LATER;
  else if (!strcmp(argv[1], "redis")) mode = REDIS;
  else { fprintf(stderr, "no mode %s (inline, later, redis)\n", argv[1]); return 2; }
  int port = atoi(argv[2]);
  unsigned threads = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
  if (mode == REDIS) {
    if (argc < 6) { fprintf(stderr, "redis mode needs REDIS_PORT and LIBRARY\n"); return 2; }
    library = argv[5];
    connect_redis(atoi(argv[4]));
  }
  if (pipe2(wake_pipe, O_NONBLOCK | O_CLOEXEC) != 0) { perror("pipe2"); return 1; }
  signal(SIGPIPE, SIG_IGN);
  /* Blocked before any thread starts, so that every thread inherits it and sigwait gets it. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  pthread_t store;
  if (mode != INLINE && pthread_create(&store, NULL, store_thread, NULL) != 0) { perror("pthread_create"); return 1; }

  struct sockaddr_in loopback = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct MHD_Daemon *daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
      &on_request, NULL,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&loopback,
      MHD_OPTION_NOTIFY_COMPLETED, &on_completed, NULL,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)8192,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
      threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads,
      MHD_OPTION_END);
  if (!daemon) { fprintf(stderr, "MHD_start_daemon failed on port %d\n", port); return 1; }
  int signal_number;
  sigwait(&stop, &signal_number);
  MHD_stop_daemon(daemon);
  return 0;
}
