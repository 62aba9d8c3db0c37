#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "process_glue.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int pf_pidfd_open(int pid) {
    /* The syscall: glibc only wraps it from 2.36. */
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int pf_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int pf_accept_cloexec(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}
