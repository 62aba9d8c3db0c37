#pragma once
/* No system header here: a type it declared (mode_t…) would then come from CShims, which is
   imported internally, and clash with Glibc's in public signatures. */

/* pidfd_open(2): a descriptor that becomes readable when the process ends, so a hook's end
   is one more event to poll, not a wait. Returns the descriptor, or -1 with errno set
   (ENOSYS before Linux 5.3). */
int pf_pidfd_open(int pid);

/* pipe2(fds, O_CLOEXEC): both ends closed on exec, set atomically (a hook spawned by another
   thread at the same moment never inherits them). Returns 0, or -1 with errno set. */
int pf_pipe_cloexec(int fds[2]);

/* accept4(fd, NULL, NULL, SOCK_CLOEXEC): the connection is never inherited by a hook spawned
   at the same moment. Returns the new descriptor, or -1 with errno set. */
int pf_accept_cloexec(int fd);
