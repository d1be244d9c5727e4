// Typed wrappers for variadic C functions that Swift cannot call directly.
// Each wrapper fixes one argument type; they can go once the C APIs offer typed variants.
#ifndef CPUSHSHIMS_H
#define CPUSHSHIMS_H
#include <curl/curl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

CURLcode cpush_easy_setopt_long(CURL *h, CURLoption o, long v);
CURLcode cpush_easy_setopt_ptr(CURL *h, CURLoption o, const void *v);
CURLcode cpush_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v);
CURLcode cpush_easy_setopt_write_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *));
CURLcode cpush_easy_setopt_header_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *));
CURLcode cpush_easy_getinfo_long(CURL *h, CURLINFO i, long *out);
CURLcode cpush_easy_getinfo_ptr(CURL *h, CURLINFO i, void **out);
CURLcode cpush_easy_getinfo_double(CURL *h, CURLINFO i, double *out);
CURLMcode cpush_multi_setopt_long(CURLM *m, CURLMoption o, long v);

/// A libmicrohttpd daemon with a deadline and eviction guard (see shims.c). Opaque.
struct cpush_mhd_server;

/// The TCP sockets libcurl opened for the handles that report to this set (CURLOPT_SOCKOPTFUNCTION
/// adds, CURLOPT_CLOSESOCKETFUNCTION removes and closes), so that a caller can cork them
/// (TCP_CORK) while it lets libcurl write a batch of requests, and uncork them after: the frames
/// of many streams then leave in full segments instead of one small segment per frame. Only ever
/// touches sockets libcurl reported open and not yet closed. Not thread-safe.
typedef struct cpush_socket_set cpush_socket_set;
cpush_socket_set *cpush_socket_set_new(void);
void cpush_socket_set_free(cpush_socket_set *set);
/// Makes `h` report its sockets to `set` (and close them through it).
CURLcode cpush_easy_track_sockets(CURL *h, cpush_socket_set *set);
/// Sets TCP_CORK to `on` (0/1) on every socket of the set; returns how many sockets it touched.
int cpush_socket_set_cork(cpush_socket_set *set, int on);
/// Number of sockets in the set.
int cpush_socket_set_count(const cpush_socket_set *set);

/// Starts a libmicrohttpd daemon on 127.0.0.1-or-any `port` with an internal polling thread
/// (epoll where available), a connection limit, a per-client-address connection limit, a
/// per-connection idle timeout (seconds), an absolute deadline per request (`deadline_seconds`
/// from the connection's accept or its previous request's end to the end of the answer, whatever
/// the client's pace) and, past `soft_limit` open connections, the oldest one shut down for each
/// new one. MHD's messages go to stderr as JSON lines (event `metrics.http`). NULL on failure.
struct cpush_mhd_server *cpush_mhd_start(uint16_t port, int loopback_only,
                                         MHD_AccessHandlerCallback handler, void *handler_cls,
                                         unsigned int connection_limit, unsigned int per_ip_limit,
                                         unsigned int timeout_seconds, double deadline_seconds,
                                         unsigned int soft_limit);

/// Stops the daemon (waits for its threads) and frees the server.
void cpush_mhd_stop(struct cpush_mhd_server *server);

/// Connections cut so far: past their deadline, and evicted to make room.
void cpush_mhd_cut_counts(struct cpush_mhd_server *server, unsigned long *deadline, unsigned long *evicted);

/// The port a started daemon listens on (useful after starting on port 0); 0 when unknown.
/// Wraps the variadic MHD_get_daemon_info.
uint16_t cpush_mhd_bound_port(struct cpush_mhd_server *server);

/// MHD's external logger (MHD_OPTION_EXTERNAL_LOGGER): one JSON line on stderr whose event is the
/// C string `cls` (NULL: metrics.http).
void cpush_mhd_log(void *cls, const char *fmt, va_list ap);

/// The level cpush_mhd_log writes MHD's message (format string `fmt`, its arguments `ap`, which are
/// not consumed) at: 0 (debug) for a peer that went away before or while sending a request (a TCP
/// health check, a client giving up); 1 (info) for a request MHD refused itself as the client's
/// fault (a Content-Length that is not a number, and the line MHD writes with each answer it makes
/// itself unless its status is 500: a malformed request, a header block or request line too large
/// (4xx), an HTTP version other than 1.x (505)); 2 (warn) otherwise (its 500, the connection limit, anything
/// unknown). Lines below the minimum the Swift side set (cpush_mhd_set_log_minimum) are not written.
int cpush_mhd_log_level(const char *fmt, va_list ap);

/// Sets the lowest level cpush_mhd_log writes, for the whole process: Log's level (the Swift side
/// owns reading PUSHFLEET_LOG_LEVEL, Log.level(from:)), passed by whoever starts a daemon. Info
/// (1) until set.
void cpush_mhd_set_log_minimum(int level);

/// Whether cpush_mhd_log writes a line of `level` at the current minimum (1 or 0).
int cpush_mhd_log_writes(int level);

#include "CPushHTTP.h"
#endif
