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

/// Starts a libmicrohttpd daemon on 127.0.0.1-or-any `port` with an internal polling thread
/// (epoll where available), a connection limit, a per-client-address connection limit and a
/// per-connection idle timeout (seconds); MHD's messages go to stderr as JSON lines
/// (event `metrics.http`). Returns NULL on failure.
struct MHD_Daemon *cpush_mhd_start(uint16_t port, int loopback_only,
                                   MHD_AccessHandlerCallback handler, void *handler_cls,
                                   unsigned int connection_limit, unsigned int per_ip_limit,
                                   unsigned int timeout_seconds);

/// The port a started daemon listens on (useful after starting on port 0); 0 when unknown.
/// Wraps the variadic MHD_get_daemon_info.
uint16_t cpush_mhd_bound_port(struct MHD_Daemon *daemon);

/// MHD's external logger (MHD_OPTION_EXTERNAL_LOGGER): one JSON line on stderr whose event is the
/// C string `cls` (NULL: metrics.http).
void cpush_mhd_log(void *cls, const char *fmt, va_list ap);

#include "CPushHTTP.h"
#endif
