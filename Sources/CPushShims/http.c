#include "CPushShims.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

struct MHD_Daemon *cpush_http_start(const struct cpush_http_options *o,
                                    MHD_AccessHandlerCallback handler,
                                    MHD_RequestCompletedCallback completed,
                                    MHD_NotifyConnectionCallback notify_connection,
                                    void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *con),
                                    void *cls) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    unsigned int pool = 1;
    if (o->thread_per_connection) {
        flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
    } else {
        flags |= MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
        pool = o->thread_pool_size < 1 ? 1 : o->thread_pool_size;
    }
    if (o->address->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    uint16_t port = o->address->sa_family == AF_INET6
        ? ntohs(((const struct sockaddr_in6 *)o->address)->sin6_port)
        : ntohs(((const struct sockaddr_in *)o->address)->sin_port);
    return MHD_start_daemon(flags, port, NULL, NULL, handler, cls,
                            MHD_OPTION_EXTERNAL_LOGGER, cpush_mhd_log, (void *)o->log_event,
                            MHD_OPTION_SOCK_ADDR, o->address,
                            MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_ip_connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, o->idle_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, o->listen_backlog,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, cls,
                            pool > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, pool,
                            MHD_OPTION_END);
}

uint16_t cpush_http_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

int cpush_http_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

int cpush_http_client_address(struct MHD_Connection *connection, char *buf, size_t len) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || len == 0) return -1;
    const struct sockaddr *sa = info->client_addr;
    const void *src = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                                : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    return inet_ntop(sa->sa_family, src, buf, (socklen_t)len) == NULL ? -1 : 0;
}

int cpush_http_value_state(const char *key, size_t key_size, const char *value, size_t value_size,
                           const char *next_key, const char *block_start, const char *block_end) {
    if (value == NULL) return CPUSH_HTTP_VALUE_WHOLE;
    if (block_start != NULL && block_end != NULL) {
        if (key < block_start || key >= block_end || key + key_size >= value || value >= block_end) {
            return CPUSH_HTTP_VALUE_FOLDED;
        }
    }
    const char *end = value + value_size;
    if (block_end != NULL && next_key != NULL) {
        if (next_key <= end || next_key >= block_end) return CPUSH_HTTP_VALUE_WHOLE;  /* the next one is folded */
        return next_key - end > 2 ? CPUSH_HTTP_VALUE_NUL : CPUSH_HTTP_VALUE_WHOLE;
    }
    if (block_end != NULL) return block_end - end > 4 ? CPUSH_HTTP_VALUE_NUL : CPUSH_HTTP_VALUE_WHOLE;
    const char *after = end + 1;
    if (*after == '\0') return CPUSH_HTTP_VALUE_WHOLE;
    return after != next_key ? CPUSH_HTTP_VALUE_NUL : CPUSH_HTTP_VALUE_WHOLE;
}

unsigned int cpush_http_queued_status(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
    return info == NULL ? 0 : info->http_status;
}

size_t cpush_http_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

int cpush_http_target_was_cut(const char *url, size_t seen_length, const char *version) {
    if (url == NULL || version == NULL || *version == '\0' || version <= url) return 0;
    return (size_t)(version - 1 - url) != seen_length;
}
