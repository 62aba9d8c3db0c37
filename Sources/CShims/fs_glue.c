#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
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

int pf_thread_id(void) {
    return (int)syscall(SYS_gettid);
}

int pf_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

int pf_fstat_sync(int fd, void *buffer) {
    struct stat *out = buffer;
#ifdef STATX_BASIC_STATS
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &sx) == 0) {
        memset(out, 0, sizeof *out);
        out->st_mode = sx.stx_mode;
        out->st_nlink = sx.stx_nlink;
        out->st_uid = sx.stx_uid;
        out->st_gid = sx.stx_gid;
        out->st_size = (off_t)sx.stx_size;
        out->st_ino = (ino_t)sx.stx_ino;
        out->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        out->st_mtim.tv_sec = sx.stx_mtime.tv_sec;
        out->st_mtim.tv_nsec = sx.stx_mtime.tv_nsec;
        out->st_ctim.tv_sec = sx.stx_ctime.tv_sec;
        out->st_ctim.tv_nsec = sx.stx_ctime.tv_nsec;
        out->st_atim.tv_sec = sx.stx_atime.tv_sec;
        out->st_atim.tv_nsec = sx.stx_atime.tv_nsec;
        return 0;
    }
    if (errno != ENOSYS && errno != EINVAL) return -1;
#endif
    return fstat(fd, out);
}

int pf_fsetxattr(int fd, const char *name, const void *value, unsigned long size) {
    return fsetxattr(fd, name, value, size, 0);
}

long pf_lgetxattr(const char *path, const char *name, void *value, unsigned long size) {
    return (long)lgetxattr(path, name, value, size);
}
