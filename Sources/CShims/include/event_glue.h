#pragma once
/* The descriptors the service's one poll waits on besides inotify: an eventfd other threads
   write to wake it, a timerfd armed to the next deadline, and a signalfd for SIGHUP, SIGTERM
   and SIGINT. The Swift Glibc module shows none of their headers. No system header here (see
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

/* Makes `signals` (count of them) arrive on a signalfd instead of killing the process or
   running a handler: blocks them in the calling thread (threads made from it later inherit
   the mask) and installs for each a handler for the threads made earlier, which blocks the
   signal in the thread it landed on and sends it again to the process, so it ends up pending
   on the signalfd (libdispatch's trick on Linux). Returns the signalfd (non-blocking,
   close-on-exec). Call it before other threads start work that must not see the signals. */
int pf_signalfd_open(const int *signals, int count);

/* Reads one pending signal: its number, 0 when none is pending. */
int pf_signalfd_read(int fd);
