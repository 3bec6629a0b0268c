/* libmicrohttpd glue: one thread per connection (a streamed response may
 * block in its reader while the engine generates), bodies collected up to
 * the cap, and the response of sv_handle sent as a buffer or, for a stream,
 * from a reader that the connection's end (a client that left included)
 * releases: that marks the job cancelled and the engine frees its sequence
 * at its next step. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "base/status.h"
#include "serve/server_internal.h"

/* The most simultaneous connections (each is a thread). */
#define MAX_CONNECTIONS 256
/* Seconds a streamed reader waits for bytes before looking again. */
#define READ_WAIT_S 1.0

typedef struct conn {
    char *body;
    size_t n, cap;
    int too_large;
} conn;

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    sv_job *j = cls;
    (void)pos;
    for (;;) {
        long n = sv_job_read(j, buf, max, READ_WAIT_S);
        if (n > 0) return (ssize_t)n;
        if (n < 0) return MHD_CONTENT_READER_END_OF_STREAM;
    }
}

static void end_stream(void *cls)
{
    sv_job *j = cls;
    sv_job_cancel(j); /* harmless when it already finished */
    sv_job_unref(j);
}

static enum MHD_Result send_response(struct MHD_Connection *c, sv_server *s, sv_response *r)
{
    struct MHD_Response *resp;
    if (r->stream) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, read_stream, r->stream,
                                                 end_stream);
        if (!resp) {
            end_stream(r->stream);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
    } else {
        resp = MHD_create_response_from_buffer(r->len, r->body ? r->body : (char *)"",
                                               r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
            free(r->body);
            return MHD_NO;
        }
    }
    if (r->content_type) MHD_add_response_header(resp, "Content-Type", r->content_type);
    if (r->retry_after) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", v);
    }
    if (r->www_authenticate) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (r->csp) {
        MHD_add_response_header(resp, "Content-Security-Policy", r->csp);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
    }
    sv_metrics_request(&s->metrics, r->status);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    sv_server *s = cls;
    conn *k = *con_cls;
    (void)version;
    if (!k) { /* the headers: set up the body */
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *con_cls = k;
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        size_t n = *upload_size;
        *upload_size = 0;
        if (k->too_large || k->n + n > sv_server_max_body(s)) {
            k->too_large = 1; /* keep reading, answer 413 at the end */
            return MHD_YES;
        }
        if (k->n + n + 1 > k->cap) {
            size_t cap = (k->n + n + 1) * 2;
            char *grown = realloc(k->body, cap);
            if (!grown) return MHD_NO;
            k->body = grown;
            k->cap = cap;
        }
        memcpy(k->body + k->n, upload, n);
        k->n += n;
        return MHD_YES;
    }
    sv_response r;
    if (k->too_large) {
        memset(&r, 0, sizeof r);
        sv_respond_too_large(s, &r);
    } else {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        sv_handle(s, method, url, auth, k->body ? k->body : "", k->n, &r);
    }
    return send_response(c, s, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode why)
{
    conn *k = *con_cls;
    (void)cls;
    (void)c;
    (void)why;
    if (k) {
        free(k->body);
        free(k);
        *con_cls = NULL;
    }
}

ember_status sv_http_start(sv_server *s)
{
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->p.port);
    const char *host = !s->p.host || !strcmp(s->p.host, "localhost") ? "127.0.0.1" : s->p.host;
    if (s->p.port < 0 || s->p.port > 65535 || inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return ember_fail(EMBER_ERR_INVALID_ARG, "serve: cannot listen on %s:%d (an IPv4 address and a port)",
                          host, s->p.port);
    s->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)s->p.port, NULL,
        NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)120, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->daemon)
        return ember_fail(EMBER_ERR_IO, "serve: cannot listen on %s:%d (in use?)", host, s->p.port);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : s->p.port;
    return EMBER_OK;
}

void sv_http_stop(sv_server *s)
{
    if (s->daemon) MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}
