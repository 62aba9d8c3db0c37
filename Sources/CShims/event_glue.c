#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
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

long long pf_eventfd_drain(int fd) {
    uint64_t count = 0;
    ssize_t n;
    do { n = read(fd, &count, sizeof count); } while (n < 0 && errno == EINTR);
    if (n == sizeof count) return (long long)count;
    return errno == EAGAIN ? 0 : -1;
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
    uint64_t count = 0;
    ssize_t n;
    do { n = read(fd, &count, sizeof count); } while (n < 0 && errno == EINTR);
    if (n == sizeof count) return (long long)count;
    return errno == EAGAIN ? 0 : -1;
}

/* Runs on whichever thread a signal landed on while that thread did not block it (a thread
   made before pf_signalfd_open): block it there for good and send it to the process again;
   it is then delivered to a thread that does not block it or, once none is left, stays
   pending for the signalfd. Only async-signal-safe calls. */
static void pf_block_and_raise(int signo) {
    int saved = errno;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), signo);
    errno = saved;
}

int pf_signalfd_open(const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    /* The handlers first: a signal arriving between the two steps is then never lost, nor
       does it kill the process (SIGHUP's default action). */
    for (int i = 0; i < count; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = pf_block_and_raise;
        action.sa_flags = SA_RESTART;
        sigfillset(&action.sa_mask);
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    int failed = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (failed) {
        errno = failed;
        return -1;
    }
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int pf_signalfd_read(int fd) {
    struct signalfd_siginfo info;
    ssize_t n;
    do { n = read(fd, &info, sizeof info); } while (n < 0 && errno == EINTR);
    if (n == sizeof info) return (int)info.ssi_signo;
    return errno == EAGAIN ? 0 : -1;
}
