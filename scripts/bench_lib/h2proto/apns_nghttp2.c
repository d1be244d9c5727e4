/* PROTOTYPE, NOT PRODUCT CODE (issue 18, part 5): what an APNs client costs when it drives nghttp2
 * directly over OpenSSL instead of going through libcurl. Measurement only; built and run by
 * scripts/bench (docs/bench.md "nghttp2 prototype"); nothing in Sources uses it.
 *
 * One TLS connection (ALPN h2, certificate verified against --ca-file), one nghttp2 client session.
 * A warm-up request goes alone (APNs allows one stream until a valid token), then, for each batch
 * size, `rounds` runs of `count` requests: a batch is submitted up to the server's
 * SETTINGS_MAX_CONCURRENT_STREAMS (read from the session, the sliding window refilled as streams
 * close), every frame nghttp2 produces is gathered into one buffer and written with one SSL_write,
 * and every readable burst is read and fed to nghttp2_session_mem_recv at once. Each request carries
 * the headers APNsClient sends (:path with a 64-hex device token, authorization, apns-topic,
 * apns-push-type, apns-priority, apns-expiration, apns-id, content-type) and the same 110-byte body.
 * Every answer's :status is checked (200 expected); the figure is process CPU (getrusage) per request.
 *
 * Usage: apns_nghttp2 HOST PORT CA_FILE AUTHORIZATION TOPIC BATCH_SIZES COUNT ROUNDS
 * Prints one JSON object: {"<size>_cpu_us": median, "<size>_ok": answers 200, "<size>_requests": n, ...}.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static const char BODY[] = "{\"aps\":{\"alert\":{\"title\":\"Your order shipped\",\"body\":\"Order 1234 is on its way\"},\"badge\":1},\"order\":\"1234\"}";

typedef struct {
    int fd;
    SSL *ssl;
    nghttp2_session *session;
    unsigned char *out;
    size_t out_len, out_cap;
    const char *authority, *authorization, *topic;
    long in_flight, ok, failed, next_id;
} client;

static void die(const char *what) {
    fprintf(stderr, "apns_nghttp2: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *user) {
    (void)s; (void)flags;
    client *c = user;
    if (c->out_len + len > c->out_cap) {
        c->out_cap = (c->out_len + len) * 2;
        c->out = realloc(c->out, c->out_cap);
        if (!c->out) die("out of memory");
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
    return (ssize_t)len;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user) {
    (void)frame; (void)flags; (void)user;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        int ok = valuelen == 3 && memcmp(value, "200", 3) == 0;
        nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, ok ? (void *)1 : (void *)2);
    }
    return 0;
}

static int on_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user) {
    client *c = user;
    void *mark = nghttp2_session_get_stream_user_data(s, stream_id);
    if (error_code == 0 && mark == (void *)1) c->ok++; else c->failed++;
    c->in_flight--;
    return 0;
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user) {
    (void)s; (void)id; (void)user;
    /* The offset sent so far lives in the source pointer (flow control may split the body). */
    size_t done = (size_t)(uintptr_t)src->ptr, left = sizeof BODY - 1 - done, n = left < len ? left : len;
    memcpy(buf, BODY + done, n);
    src->ptr = (void *)(uintptr_t)(done + n);
    if (done + n == sizeof BODY - 1) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void flush(client *c) {
    if (nghttp2_session_send(c->session) != 0) die("nghttp2_session_send");
    size_t off = 0;
    while (off < c->out_len) {
        int n = SSL_write(c->ssl, c->out + off, (int)(c->out_len - off));
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
                struct pollfd p = {c->fd, POLLOUT, 0};
                poll(&p, 1, 1000);
                continue;
            }
            die("SSL_write");
        }
        off += (size_t)n;
    }
    c->out_len = 0;
}

static void submit(client *c) {
    static const char hex[] = "0123456789abcdef";
    char path[80], id[37];
    long n = c->next_id++;
    snprintf(path, sizeof path, "/3/device/%064lx", n);
    unsigned char r[16];
    RAND_bytes(r, sizeof r);
    for (int i = 0, k = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) id[k++] = '-';
        id[k++] = hex[r[i] >> 4];
        id[k++] = hex[r[i] & 15];
    }
    id[36] = 0;
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NO_COPY_NAME}
    nghttp2_nv nva[] = {
        NV(":method", "POST"), NV(":scheme", "https"), NV(":authority", c->authority), NV(":path", path),
        NV("authorization", c->authorization), NV("apns-topic", c->topic), NV("apns-push-type", "alert"),
        NV("apns-priority", "10"), NV("apns-expiration", "0"), NV("apns-id", id),
        NV("content-type", "application/json"),
    };
    nghttp2_data_provider body = {.source = {.ptr = NULL}, .read_callback = read_body};
    if (nghttp2_submit_request(c->session, NULL, nva, sizeof nva / sizeof nva[0], &body, NULL) < 0) die("submit");
    c->in_flight++;
}

static void receive(client *c, int wait_ms) {
    struct pollfd p = {c->fd, POLLIN, 0};
    if (SSL_pending(c->ssl) == 0 && poll(&p, 1, wait_ms) <= 0) return;
    unsigned char buf[65536];
    for (;;) {
        int n = SSL_read(c->ssl, buf, sizeof buf);
        if (n <= 0) {
            int e = SSL_get_error(c->ssl, n);
            if (e == SSL_ERROR_WANT_READ) return;
            die("SSL_read (connection closed?)");
        }
        if (nghttp2_session_mem_recv(c->session, buf, (size_t)n) < 0) die("mem_recv");
        if (SSL_pending(c->ssl) == 0) {
            struct pollfd q = {c->fd, POLLIN, 0};
            if (poll(&q, 1, 0) <= 0) return;
        }
    }
}

/* Sends `count` requests in batches of `batch`, each batch refilled up to the server's stream limit. */
static void run(client *c, long count, long batch) {
    long sent = 0;
    while (sent < count) {
        long this_batch = count - sent < batch ? count - sent : batch, submitted = 0;
        while (submitted < this_batch || c->in_flight > 0) {
            long limit = (long)nghttp2_session_get_remote_settings(c->session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
            while (submitted < this_batch && c->in_flight < limit) { submit(c); submitted++; }
            flush(c);
            receive(c, 1000);
        }
        sent += this_batch;
    }
}

static double cpu_us(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 9) { fprintf(stderr, "usage: apns_nghttp2 HOST PORT CA AUTHORIZATION TOPIC SIZES COUNT ROUNDS\n"); return 64; }
    client c = {0};
    char authority[300];
    snprintf(authority, sizeof authority, "%s:%s", argv[1], argv[2]);
    c.authority = authority;
    c.authorization = argv[4];
    c.topic = argv[5];
    long count = atol(argv[7]), rounds = atol(argv[8]);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) die("HOST must be an IPv4 address");
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c.fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("connect");
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(ctx, argv[3], NULL) != 1) die("CA file");
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    static const unsigned char alpn[] = "\x02h2";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
    c.ssl = SSL_new(ctx);
    SSL_set1_host(c.ssl, argv[1]);
    SSL_set_fd(c.ssl, c.fd);
    if (SSL_connect(c.ssl) != 1) die("TLS handshake");
    const unsigned char *proto; unsigned proto_len;
    SSL_get0_alpn_selected(c.ssl, &proto, &proto_len);
    if (proto_len != 2 || memcmp(proto, "h2", 2) != 0) die("server did not select h2");
    /* Non-blocking from here on: reads return WANT_READ instead of waiting. */
    if (fcntl(c.fd, F_SETFL, O_NONBLOCK) != 0) die("O_NONBLOCK");

    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_send_callback(cb, on_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_client_new(&c.session, cb, &c);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, iv, 2);

    run(&c, 1, 1);  /* warm-up: one stream until the token is accepted */
    for (int i = 0; i < 20 && c.in_flight == 0; i++) receive(&c, 20);  /* the raised SETTINGS */
    if (c.ok != 1) die("warm-up request not answered 200");

    char sizes[256];
    snprintf(sizes, sizeof sizes, "%s", argv[6]);
    long size_list[16]; int nsizes = 0;
    for (char *t = strtok(sizes, ","); t && nsizes < 16; t = strtok(NULL, ",")) size_list[nsizes++] = atol(t);
    double results[16][64]; long oks[16] = {0}, reqs[16] = {0};
    for (long r = 0; r < rounds && r < 64; r++) {
        for (int k = 0; k < nsizes; k++) {
            long n = size_list[k] == 1 ? (count / 4 > 200 ? count / 4 : 200) : count;
            long ok_before = c.ok;
            double t0 = cpu_us();
            run(&c, n, size_list[k]);
            results[k][r] = (cpu_us() - t0) / (double)n;
            oks[k] += c.ok - ok_before;
            reqs[k] += n;
        }
    }
    printf("{");
    for (int k = 0; k < nsizes; k++) {
        long n = rounds < 64 ? rounds : 64;
        qsort(results[k], (size_t)n, sizeof(double), cmp);
        double med = n % 2 ? results[k][n / 2] : (results[k][n / 2 - 1] + results[k][n / 2]) / 2;
        printf("%s\"%ld_cpu_us\":\"%.3f\",\"%ld_ok\":\"%ld\",\"%ld_requests\":\"%ld\"", k ? "," : "",
               size_list[k], med, size_list[k], oks[k], size_list[k], reqs[k]);
    }
    printf(",\"failed\":\"%ld\"}\n", c.failed);
    nghttp2_session_del(c.session);
    SSL_free(c.ssl);
    SSL_CTX_free(ctx);
    close(c.fd);
    return c.failed == 0 ? 0 : 1;
}
