#pragma once
/* The descriptors the service's one poll waits on besides inotify: an eventfd other threads
   write to wake it, a timerfd armed to the next deadline, and the eventfd the handler of
   SIGHUP, SIGTERM and SIGINT writes. The Swift Glibc module shows none of their headers. No system header here (see
   process_glue.h). Every call returns -1 with errno set on failure. */

/* eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC). */
int pf_eventfd(void);

/* Adds one to the counter (wakes a poll on it); 0, or -1 (EAGAIN only when it is full, which
   still wakes the poll). */
int pf_eventfd_signal(int fd);

/* Reads the counter and so resets it: the count (0 when nothing was written). */
long long pf_eventfd_drain(int fd);

/* timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC). */
int pf_timerfd(void);

/* Arms the timer to fire once, `nanoseconds` from now (at least 1 ns: 0 would disarm it), or
   disarms it when `nanoseconds` is negative. */
int pf_timerfd_arm(int fd, long long nanoseconds);

/* Reads the expirations (and so resets readiness): their count, 0 when none. */
long long pf_timerfd_drain(int fd);

/* Makes `signals` (count of them) events instead of killing the process or doing work in a
   handler: each gets a handler (on whatever thread it lands, SA_RESTART) that only marks it
   pending and writes an eventfd — the self-pipe trick. Returns that eventfd (non-blocking,
   close-on-exec), readable while a signal is pending. Not a signalfd: a signalfd sees only
   signals blocked in every thread, and the Swift runtime's main thread waits in
   sigsuspend() with an empty mask, taking every signal itself. */
int pf_signals_open(const int *signals, int count);

/* Whether `signal` came since the last call (and clears it); 0 or 1. */
int pf_signal_take(int signal);
