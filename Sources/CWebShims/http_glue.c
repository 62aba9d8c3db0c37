#define _GNU_SOURCE
#include "CWebShims.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pf_http_server {
    struct MHD_Daemon *daemon;
    void (*log)(void *cls, const char *message);
    void *log_cls;
};

/* Paths and query strings reach the handler as sent: the handler decodes each part itself
   (a "%2f" inside a path segment must stay apart from a real "/"). */
static size_t keep_escaped(void *cls, struct MHD_Connection *connection, char *s) {
    (void) cls;
    (void) connection;
    return strlen(s);
}

static void log_trampoline(void *cls, const char *format, va_list ap) {
    struct pf_http_server *server = cls;
    if (server->log == NULL) return;
    char message[1024];
    vsnprintf(message, sizeof message, format, ap);
    size_t n = strlen(message);
    while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == '\r')) message[--n] = 0;
    server->log(server->log_cls, message);
}

pf_http_server *pf_http_start(const struct pf_http_options *o) {
    struct pf_http_server *server = calloc(1, sizeof *server);
    if (server == NULL) return NULL;
    server->log = o->log;
    server->log_cls = o->log_cls;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    int tls = o->tls_key_pem != NULL && o->tls_cert_pem != NULL;
    if (tls) flags |= MHD_USE_TLS;
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t) log_trampoline, server },
        { MHD_OPTION_LISTEN_SOCKET, o->listen_fd, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, o->threads > 1 ? o->threads : 0, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, o->connection_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_address_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_seconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) o->memory_limit, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) o->completed, o->completed_cls },
        { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t) keep_escaped, NULL },
        { tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, (void *) o->tls_key_pem },
        { tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, (void *) o->tls_cert_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    /* Port 0 and a listening socket given: the server never binds one of its own. */
    server->daemon = MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->handler_cls,
                                      MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (server->daemon == NULL) {
        free(server);
        return NULL;
    }
    return server;
}

void pf_http_stop(pf_http_server *server) {
    if (server == NULL) return;
    /* The listening socket is the caller's (systemd's): take it back before the stop closes it. */
    MHD_quiesce_daemon(server->daemon);
    MHD_stop_daemon(server->daemon);
    free(server);
}

int pf_http_has_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

void pf_http_client_address(struct MHD_Connection *connection, char *out, size_t size) {
    if (size == 0) return;
    out[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, out, (socklen_t) size);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, out, (socklen_t) size);
    } else if (sa->sa_family == AF_UNIX) {
        snprintf(out, size, "local");
    }
}

void pf_http_set_priority(int nice) {
    static __thread int current = INT_MIN;  /* not set yet: the first call sets it */
    if (nice == current) return;
    /* Per thread on Linux: PRIO_PROCESS with a thread id. EPERM (no room to raise it, or a
       filter) leaves it as it is, and the next request tries again. */
    if (setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), nice) == 0) current = nice;
}

int pf_start_writeback(int fd, long long offset, long long count) {
    int r;
    do r = sync_file_range(fd, (off64_t) offset, (off64_t) count, SYNC_FILE_RANGE_WRITE);
    while (r == -1 && errno == EINTR);
    return r;
}
