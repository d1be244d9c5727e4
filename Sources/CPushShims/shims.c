#include "CPushShims.h"
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/socket.h>

#include <netinet/tcp.h>

CURLcode cpush_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
CURLcode cpush_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
CURLcode cpush_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
CURLcode cpush_easy_setopt_write_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
CURLcode cpush_easy_setopt_header_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
CURLcode cpush_easy_getinfo_long(CURL *h, CURLINFO i, long *out) { return curl_easy_getinfo(h, i, out); }
CURLcode cpush_easy_getinfo_ptr(CURL *h, CURLINFO i, void **out) { return curl_easy_getinfo(h, i, out); }
CURLcode cpush_easy_getinfo_double(CURL *h, CURLINFO i, double *out) { return curl_easy_getinfo(h, i, out); }
CURLMcode cpush_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

struct cpush_socket_set { curl_socket_t *fds; int count; int capacity; };

cpush_socket_set *cpush_socket_set_new(void) { return calloc(1, sizeof(cpush_socket_set)); }

void cpush_socket_set_free(cpush_socket_set *set) {
    if (set == NULL) return;
    free(set->fds);
    free(set);
}

static int cpush_socket_opened(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    cpush_socket_set *set = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
    if (set->count == set->capacity) {
        int capacity = set->capacity ? set->capacity * 2 : 16;
        curl_socket_t *grown = realloc(set->fds, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return CURL_SOCKOPT_OK;  /* untracked: never corked, still works */
        set->fds = grown;
        set->capacity = capacity;
    }
    set->fds[set->count++] = fd;
    return CURL_SOCKOPT_OK;
}

static int cpush_socket_closing(void *clientp, curl_socket_t fd) {
    cpush_socket_set *set = clientp;
    for (int i = 0; i < set->count; i++) {
        if (set->fds[i] == fd) { set->fds[i] = set->fds[--set->count]; break; }
    }
    return close(fd);
}

CURLcode cpush_easy_track_sockets(CURL *h, cpush_socket_set *set) {
    CURLcode c = curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, cpush_socket_opened);
    if (c == CURLE_OK) c = curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, set);
    if (c == CURLE_OK) c = curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, cpush_socket_closing);
    if (c == CURLE_OK) c = curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, set);
    return c;
}

int cpush_socket_set_cork(cpush_socket_set *set, int on) {
    for (int i = 0; i < set->count; i++) {
        (void)setsockopt(set->fds[i], IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    }
    return set->count;
}

int cpush_socket_set_count(const cpush_socket_set *set) { return set->count; }

/* MHD's messages that say only that the peer went away before or while sending a request: what a
 * TCP health check or a client that gives up does, normal for a server (nginx logs "client closed
 * connection while waiting for request" at info). Prefixes of libmicrohttpd 0.9.75's format strings. */
static const char *const cpush_mhd_peer_messages[] = {
    "Connection socket is closed when reading request",
    "Connection was closed by remote side",
    "The connection was forcibly closed by remote peer",
    "Socket has been disconnected when reading request",
};

/* MHD's messages about a request it refused itself, before the application saw it: the client's
 * malformed or oversized request (a Content-Length that is not a number or too large for 64 bits,
 * HTTP/1.1 without Host under strict parsing). */
static const char *const cpush_mhd_client_messages[] = {
    "Failed to parse `Content-Length' header",
    "Too large value of 'Content-Length' header",
    "Received HTTP/1.1 request without `Host' header",
};

/* The message MHD writes with every answer it makes itself, its status the first argument. */
static const char cpush_mhd_error_answer[] = "Error processing request (HTTP response code is %u";

static int cpush_has_prefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

int cpush_mhd_log_level(const char *fmt, va_list ap) {
    if (fmt == NULL) return 2;
    for (size_t i = 0; i < sizeof cpush_mhd_peer_messages / sizeof cpush_mhd_peer_messages[0]; i++) {
        if (cpush_has_prefix(fmt, cpush_mhd_peer_messages[i])) return 0;
    }
    for (size_t i = 0; i < sizeof cpush_mhd_client_messages / sizeof cpush_mhd_client_messages[0]; i++) {
        if (cpush_has_prefix(fmt, cpush_mhd_client_messages[i])) return 1;
    }
    if (cpush_has_prefix(fmt, cpush_mhd_error_answer)) {
        va_list copy;
        va_copy(copy, ap);
        unsigned int status = va_arg(copy, unsigned int);
        va_end(copy);
        return status >= 400 && status != 500 ? 1 : 2;
    }
    return 2;
}

/* The lowest level cpush_mhd_log writes (debug 0, info 1, warn 2, error 3), as the Swift side
 * read PUSHFLEET_LOG_LEVEL (Log.level(from:)) and passed it (cpush_mhd_set_log_minimum) before
 * starting a daemon; info until then. */
static _Atomic int cpush_log_minimum = 1;

void cpush_mhd_set_log_minimum(int level) { cpush_log_minimum = level; }

int cpush_mhd_log_writes(int level) { return level >= cpush_log_minimum; }

/* One JSON object per line on stderr, like the worker's own logs (Log.swift): MHD's messages
 * ("Server reached connection limit...", a malformed request) as the event named by cls (a C
 * string; NULL: metrics.http), the text escaped for JSON and cut to 400 bytes, at the level
 * cpush_mhd_log_level gives. A request's content never reaches these
 * messages. */
void cpush_mhd_log(void *cls, const char *fmt, va_list ap) {
    int level = cpush_mhd_log_level(fmt, ap);
    if (!cpush_mhd_log_writes(level)) return;
    const char *event = cls == NULL ? "metrics.http" : (const char *)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm parts;
    gmtime_r(&now.tv_sec, &parts);
    char line[1200];
    int n = snprintf(line, sizeof line,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"event\":\"%s\",\"message\":\"",
                     parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min,
                     parts.tm_sec, now.tv_nsec / 1000000, level == 0 ? "debug" : level == 1 ? "info" : "warn", event);
    if (n < 0) return;
    size_t len = (size_t)n;
    for (size_t i = 0; msg[i] != '\0' && i < 400 && len + 8 < sizeof line; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c == '"' || c == '\\') { line[len++] = '\\'; line[len++] = (char)c; }
        else if (c == '\n' || c == '\r' || c == '\t') { line[len++] = ' '; }
        else if (c < 0x20) { continue; }
        else { line[len++] = (char)c; }
    }
    while (len > 0 && line[len - 1] == ' ') len--;
    line[len++] = '"'; line[len++] = '}'; line[len++] = '\n';
    ssize_t ignored = write(2, line, len);
    (void)ignored;
}

/* The deadline and eviction guard of one daemon (issue 13). MHD's own timeout is an idle timeout:
 * a client sending one header line every 2 s keeps a connection forever, and enough of them fill
 * every slot. So each connection's current request (from its accept, or from the end of its
 * previous request) must complete within `deadline` seconds whatever its pace, and once more than
 * `soft_limit` connections are open, each new one shuts the oldest down: a probe, answered within
 * milliseconds, is never the oldest, so it always gets a slot under such a load.
 * A connection is cut with shutdown(2), never close(2): MHD sees the end of the stream and closes
 * it itself. Slots are freed in MHD's CLOSED notification, which MHD sends before it closes the
 * socket, under the same lock the reaper holds while it cuts: a descriptor is never cut after
 * MHD let go of it (it could belong to another connection by then). */
struct cpush_mhd_slot {
    int fd;
    int used;
    int cut;
    double started;
};

struct cpush_mhd_server {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t reaper;
    int reaper_started;
    int stopping;
    struct cpush_mhd_slot *slots;
    unsigned int capacity;
    unsigned int active;
    unsigned int soft_limit;
    double deadline;
    unsigned long cut_deadline;
    unsigned long cut_evicted;
};

static double cpush_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Caller holds the lock. */
static void cpush_cut(struct cpush_mhd_slot *slot) {
    if (slot->cut || slot->fd < 0) return;
    slot->cut = 1;
    shutdown(slot->fd, SHUT_RDWR);
}

static void cpush_mhd_notify_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                                        enum MHD_ConnectionNotificationCode toe) {
    struct cpush_mhd_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = info == NULL ? -1 : info->connect_fd;
        double now = cpush_now();
        pthread_mutex_lock(&s->lock);
        struct cpush_mhd_slot *mine = NULL;
        for (unsigned int i = 0; i < s->capacity; i++) {
            if (!s->slots[i].used) { mine = &s->slots[i]; break; }
        }
        if (mine != NULL) {
            mine->used = 1;
            mine->cut = 0;
            mine->fd = fd;
            mine->started = now;
            s->active++;
        }
        *socket_context = mine;
        if (s->active > s->soft_limit) {
            struct cpush_mhd_slot *oldest = NULL;
            for (unsigned int i = 0; i < s->capacity; i++) {
                struct cpush_mhd_slot *c = &s->slots[i];
                if (c->used && !c->cut && c != mine && (oldest == NULL || c->started < oldest->started)) oldest = c;
            }
            if (oldest != NULL) { cpush_cut(oldest); s->cut_evicted++; }
        }
        pthread_mutex_unlock(&s->lock);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct cpush_mhd_slot *slot = *socket_context;
        if (slot == NULL) return;
        pthread_mutex_lock(&s->lock);
        slot->used = 0;
        slot->fd = -1;
        s->active--;
        pthread_mutex_unlock(&s->lock);
        *socket_context = NULL;
    }
}

/* A request ended (answered, or aborted): the connection's next request gets a deadline of its own. */
static void cpush_mhd_request_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                                        enum MHD_RequestTerminationCode toe) {
    (void)con_cls;
    (void)toe;
    struct cpush_mhd_server *s = cls;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == NULL || info->socket_context == NULL) return;
    struct cpush_mhd_slot *slot = info->socket_context;
    pthread_mutex_lock(&s->lock);
    if (slot->used) slot->started = cpush_now();
    pthread_mutex_unlock(&s->lock);
}

static void *cpush_mhd_reaper(void *arg) {
    struct cpush_mhd_server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&s->wake, &s->lock, &until);
        double now = cpush_now();
        for (unsigned int i = 0; i < s->capacity; i++) {
            struct cpush_mhd_slot *c = &s->slots[i];
            if (c->used && !c->cut && now - c->started > s->deadline) { cpush_cut(c); s->cut_deadline++; }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

struct cpush_mhd_server *cpush_mhd_start(uint16_t port, int loopback_only,
                                         MHD_AccessHandlerCallback handler, void *handler_cls,
                                         unsigned int connection_limit, unsigned int per_ip_limit,
                                         unsigned int timeout_seconds, double deadline_seconds,
                                         unsigned int soft_limit) {
    if (connection_limit == 0) return NULL;
    struct cpush_mhd_server *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->slots = calloc(connection_limit, sizeof *s->slots);
    if (s->slots == NULL) { free(s); return NULL; }
    for (unsigned int i = 0; i < connection_limit; i++) s->slots[i].fd = -1;
    s->capacity = connection_limit;
    s->soft_limit = soft_limit == 0 || soft_limit > connection_limit ? connection_limit : soft_limit;
    s->deadline = deadline_seconds > 0 ? deadline_seconds : 5;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = loopback_only ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
    s->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG,
                                 port, NULL, NULL, handler, handler_cls,
                                 MHD_OPTION_EXTERNAL_LOGGER, cpush_mhd_log, NULL,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                                 MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                                 MHD_OPTION_NOTIFY_CONNECTION, cpush_mhd_notify_connection, s,
                                 MHD_OPTION_NOTIFY_COMPLETED, cpush_mhd_request_completed, s,
                                 MHD_OPTION_END);
    if (s->daemon == NULL || pthread_create(&s->reaper, NULL, cpush_mhd_reaper, s) != 0) {
        if (s->daemon != NULL) MHD_stop_daemon(s->daemon);
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s->slots);
        free(s);
        return NULL;
    }
    s->reaper_started = 1;
    return s;
}

void cpush_mhd_stop(struct cpush_mhd_server *s) {
    if (s == NULL) return;
    MHD_stop_daemon(s->daemon);
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    if (s->reaper_started) pthread_join(s->reaper, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s->slots);
    free(s);
}

void cpush_mhd_cut_counts(struct cpush_mhd_server *s, unsigned long *deadline, unsigned long *evicted) {
    pthread_mutex_lock(&s->lock);
    *deadline = s->cut_deadline;
    *evicted = s->cut_evicted;
    pthread_mutex_unlock(&s->lock);
}

uint16_t cpush_mhd_bound_port(struct cpush_mhd_server *s) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
