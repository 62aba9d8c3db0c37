#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "event_glue.h"

int pf_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int pf_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t n;
    do { n = write(fd, &one, sizeof one); } while (n < 0 && errno == EINTR);
    return n == sizeof one ? 0 : -1;
}

/* An eventfd's or a timerfd's 8-byte counter, read (and so reset): 0 when there was none. */
static long long pf_read_counter(int fd) {
    uint64_t count = 0;
    ssize_t n;
    do { n = read(fd, &count, sizeof count); } while (n < 0 && errno == EINTR);
    if (n == sizeof count) return (long long)count;
    return errno == EAGAIN ? 0 : -1;
}

long long pf_eventfd_drain(int fd) {
    return pf_read_counter(fd);
}

int pf_timerfd(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

int pf_timerfd_arm(int fd, long long nanoseconds) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (nanoseconds >= 0) {
        if (nanoseconds == 0) nanoseconds = 1;
        spec.it_value.tv_sec = (time_t)(nanoseconds / 1000000000LL);
        spec.it_value.tv_nsec = (long)(nanoseconds % 1000000000LL);
    }
    return timerfd_settime(fd, 0, &spec, NULL);
}

long long pf_timerfd_drain(int fd) {
    return pf_read_counter(fd);
}

/* Which signals came, and the eventfd that says so (written by the handler). */
static volatile sig_atomic_t pf_pending[65];
static volatile int pf_signal_wakeup = -1;

/* Only async-signal-safe calls: a store and a write(). */
static void pf_note_signal(int signo) {
    int saved = errno;
    if (signo > 0 && signo < 65) pf_pending[signo] = 1;
    int fd = pf_signal_wakeup;
    if (fd >= 0) {
        uint64_t one = 1;
        ssize_t ignored = write(fd, &one, sizeof one);
        (void)ignored;
    }
    errno = saved;
}

int pf_signals_open(const int *signals, int count) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -1;
    pf_signal_wakeup = fd;
    for (int i = 0; i < count; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = pf_note_signal;
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    /* Unblocked in this thread (and the threads made from it), in case something blocked
       them before: a signal must reach a handler somewhere. */
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    return fd;
}

int pf_signal_take(int signal) {
    if (signal <= 0 || signal >= 65) return 0;
    int was = pf_pending[signal];
    pf_pending[signal] = 0;
    return was ? 1 : 0;
}
