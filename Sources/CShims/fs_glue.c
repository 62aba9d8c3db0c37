#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fs_glue.h"

const int pf_o_path = O_PATH;

int pf_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    /* The syscall, not the glibc wrapper: renameat2 only entered glibc in 2.28. */
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 1u /* RENAME_NOREPLACE */);
}
