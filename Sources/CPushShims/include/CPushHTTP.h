// The HTTP API server's calls into GNU libmicrohttpd that Swift cannot make (variadic
// MHD_start_daemon, MHD_get_connection_info), wrapped with fixed argument types.
#ifndef CPUSHHTTP_H
#define CPUSHHTTP_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// How the daemon runs (see PushAPI's HTTPServer for why each is chosen).
struct cpush_http_options {
    /// IPv4 or IPv6 address to bind (sockaddr_in or sockaddr_in6), port included.
    const struct sockaddr *address;
    /// Nonzero: one thread per connection (blocking handlers); zero: internal epoll threads with
    /// suspend/resume (handlers hand their work to other threads).
    int thread_per_connection;
    /// Event-loop threads when thread_per_connection is zero (1 = a single polling thread).
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;
    /// Idle seconds after which MHD closes a connection.
    unsigned int idle_timeout_seconds;
    /// Bytes of MHD's per-connection memory pool (bounds the request header block).
    size_t connection_memory_limit;
    unsigned int listen_backlog;
    /// Event name of MHD's own log lines (a static C string).
    const char *log_event;
};

/// Starts the daemon; NULL on failure (port taken, bad address). The callbacks all get `cls`.
struct MHD_Daemon *cpush_http_start(const struct cpush_http_options *options,
                                    MHD_AccessHandlerCallback handler,
                                    MHD_RequestCompletedCallback completed,
                                    MHD_NotifyConnectionCallback notify_connection,
                                    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *con),
                                    void *cls);

/// The port the daemon listens on (after starting on port 0); 0 when unknown.
uint16_t cpush_http_bound_port(struct MHD_Daemon *daemon);

/// The connection's socket, or -1.
int cpush_http_connection_fd(struct MHD_Connection *connection);

/// The peer's address as text (IPv4 dotted or IPv6) into buf; 0 on success, -1 otherwise.
int cpush_http_client_address(struct MHD_Connection *connection, char *buf, size_t len);

/// What `cpush_http_value_state` found about one header line.
enum cpush_http_value {
    /// The value is whole.
    CPUSH_HTTP_VALUE_WHOLE = 0,
    /// The client sent a NUL byte inside the value or at its end (`k\0`): the value was cut there.
    CPUSH_HTTP_VALUE_NUL = 1,
    /// The header was continued on an obsolete folded line (RFC 9112 §5.2), which libmicrohttpd
    /// joins to the header's name, moving the name out of the header block.
    CPUSH_HTTP_VALUE_FOLDED = 2,
};

/// Whether a header's value was cut at a NUL byte the client sent, inside it or at its end (`k\0`),
/// or the header was folded. libmicrohttpd 0.9.75 measures values with strlen, so `value_size`
/// stops at the first NUL; it parses the header block in place (from `block_start`, the method's
/// first byte, to `block_end`, that plus MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE), ending each line
/// with NUL where its CR and LF were. After a whole value come one or two NULs (bare LF or CRLF)
/// and then the next header's name (`next_key`; NULL for the last header, whose terminator the
/// blank line's one or two NULs follow up to `block_end`). More bytes than that between the
/// value's strlen end and the next name (or the block's end) are a NUL the client sent and
/// whatever followed it. One case stays invisible: a single NUL right before a bare-LF line end
/// (`k\0\n`) leaves exactly the two NULs a CRLF leaves; every CRLF line is checked exactly. A name
/// outside the block was moved there by a fold; a header followed by a folded one is not measured
/// (the folded one is refused). With `block_start` or `block_end` NULL (the header size unknown)
/// only the byte after the terminator is read: a non-NUL one that is not the next name is the rest
/// of a cut value.
int cpush_http_value_state(const char *key, size_t key_size, const char *value, size_t value_size,
                           const char *next_key, const char *block_start, const char *block_end);

/// The status of the answer queued on the connection, or 0 when none is: in the request-completed
/// callback of a request libmicrohttpd refused itself (the application never saw it), the status
/// of libmicrohttpd's own answer (MHD_CONNECTION_INFO_HTTP_STATUS).
unsigned int cpush_http_queued_status(struct MHD_Connection *connection);

/// Bytes of the request line, headers and blank line (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE),
/// counted from the method's first byte; 0 when unknown (before the headers are in).
size_t cpush_http_header_size(struct MHD_Connection *connection);

/// Whether the request-target was cut at a NUL byte the client sent (raw, not `%00`).
/// libmicrohttpd 0.9.75 parses the request line in place: it ends the target with a NUL where
/// the space before the HTTP version was, so for a whole target `version == url + length + 1`,
/// where `length` is the target's strlen as the URI log callback saw it (before the query is
/// split off and the path unescaped in place) and `url` the same pointer the access handler gets.
/// A raw NUL inside the target makes that strlen shorter than the span. A line without a
/// version (empty `version`) is refused by libmicrohttpd itself before the handler runs.
int cpush_http_target_was_cut(const char *url, size_t seen_length, const char *version);
#endif
