#pragma once
/* The little C the HTTP server needs: libmicrohttpd's start, connection-info and logging calls
   are variadic (Swift cannot call a C `...` function, nor format a va_list), so they are made
   here, each once. Everything else is called from Swift directly. */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* How a server is started; every field is read once, by pf_http_start. */
struct pf_http_options {
    int listen_fd;                 /* a listening stream socket the server accepts on (never bound here) */
    unsigned int threads;          /* polling threads (epoll each), sharing the listening socket */
    unsigned int connection_limit; /* connections open at once; more are closed at accept */
    unsigned int per_address_limit; /* connections open at once from one address (0: no limit) */
    unsigned int timeout_seconds;  /* a connection idle this long is closed */
    size_t memory_limit;           /* per connection: request head and read buffer */
    const char *tls_key_pem;       /* both set: HTTPS with GnuTLS; both NULL: plain HTTP */
    const char *tls_cert_pem;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    /* libmicrohttpd's own messages, formatted (may be NULL). */
    void (*log)(void *cls, const char *message);
    void *log_cls;
};

typedef struct pf_http_server pf_http_server;

/* Starts a server; NULL when libmicrohttpd refuses (the reason went to options->log). */
pf_http_server *pf_http_start(const struct pf_http_options *options);

/* Stops accepting, closes every connection, ends the threads, frees the server. */
void pf_http_stop(pf_http_server *server);

/* Whether this libmicrohttpd was built with TLS (GnuTLS). */
int pf_http_has_tls(void);

/* The peer's address as text ("127.0.0.1", "::1"); "" when unknown. */
void pf_http_client_address(struct MHD_Connection *connection, char *out, size_t size);

/* Sets the calling thread's CPU priority to `nice` when it is not that already (one system
   call only when it changes). Raising it again (a lower `nice`) needs RLIMIT_NICE room
   (the unit's LimitNICE=) or root: without, the thread stays where it is. */
void pf_http_set_priority(int nice);

/* Starts writing `count` bytes of the file from `offset` to disk without waiting
   (sync_file_range, SYNC_FILE_RANGE_WRITE): a later fsync waits only for what is still in
   flight. No durability by itself. 0, or -1 with errno. */
int pf_start_writeback(int fd, long long offset, long long count);
