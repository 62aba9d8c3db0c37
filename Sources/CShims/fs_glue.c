#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fs_glue.h"

const int pf_o_path = O_PATH;

int pf_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    /* The syscall, not the glibc wrapper: renameat2 only entered glibc in 2.28. */
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 1u /* RENAME_NOREPLACE */);
}

int pf_fstatfs_type(int fd, unsigned int *type) {
    struct statfs st;
    if (fstatfs(fd, &st) != 0) return -1;
    *type = (unsigned int)st.f_type;
    return 0;
}

int pf_statfs_type(const char *path, unsigned int *type) {
    struct statfs st;
    if (statfs(path, &st) != 0) return -1;
    *type = (unsigned int)st.f_type;
    return 0;
}

int pf_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
