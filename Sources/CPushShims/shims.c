#include "CPushShims.h"
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
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

/* One JSON object per line on stderr, like the worker's own logs (Log.swift): MHD's messages
 * ("Server reached connection limit...", a malformed request) as event metrics.http, the text
 * escaped for JSON and cut to 400 bytes. A request's content never reaches these messages. */
static void cpush_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm parts;
    gmtime_r(&now.tv_sec, &parts);
    char line[1200];
    int n = snprintf(line, sizeof line,
                     "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"warn\",\"event\":\"metrics.http\",\"message\":\"",
                     parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min,
                     parts.tm_sec, now.tv_nsec / 1000000);
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

struct MHD_Daemon *cpush_mhd_start(uint16_t port, int loopback_only,
                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                   unsigned int connection_limit, unsigned int per_ip_limit,
                                   unsigned int timeout_seconds) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = loopback_only ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
    return MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG,
                            port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_EXTERNAL_LOGGER, cpush_mhd_log, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_END);
}

uint16_t cpush_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}
