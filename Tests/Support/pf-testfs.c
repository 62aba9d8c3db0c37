/* pf-testfs: a passthrough FUSE file system for the tests (libfuse3). It shows a backing
 * folder at a mount point, like sshfs or bindfs do, and like them it refuses rename flags
 * (renameat2 RENAME_NOREPLACE answers EINVAL), so the daemon must use its share-mode claims.
 * Files written straight into the backing folder play another machine's writes: they reach
 * no inotify watch on the mount point.
 *
 * PF_TESTFS_HANG_FSYNC=NAME[,NAME...] plays a share whose server stops answering syncs: an fsync
 * (or fdatasync) of a file of one of those names does not return until a file named
 * .pf-testfs-release is made in the backing folder (the server answers again), and
 * "pf-testfs: fsync of PATH hangs" is written to stderr when one starts (what the test waits
 * for). Other requests are still answered meanwhile (libfuse's threads). A request the kernel
 * handed over is waited for even by a killed client: the test releases the syncs before it
 * stops anything.
 *
 *   cc -O1 -o pf-testfs pf-testfs.c $(pkg-config --cflags --libs fuse3)
 *   pf-testfs BACKING MOUNTPOINT -f [-o options]
 *
 * Built by the test suite with cc (never part of the product). */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static char backing[PATH_MAX];

static void full(char out[PATH_MAX], const char *path) {
    snprintf(out, PATH_MAX, "%s%s", backing, path);
}

#define PATH(p) char real[PATH_MAX]; full(real, p)
#define CHECK(call) return (call) == -1 ? -errno : 0

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    (void)conn;
    cfg->use_ino = 1;
    /* No caching of names or attributes: another "machine" writes the backing folder. */
    cfg->entry_timeout = 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    return NULL;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if (fi) return fstat((int)fi->fh, st) == -1 ? -errno : 0;
    PATH(path);
    CHECK(lstat(real, st));
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t offset,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)offset; (void)fi; (void)flags;
    PATH(path);
    DIR *dir = opendir(real);
    if (!dir) return -errno;
    struct dirent *e;
    while ((e = readdir(dir))) {
        struct stat st = {0};
        st.st_ino = e->d_ino;
        st.st_mode = (mode_t)(e->d_type << 12);
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    closedir(dir);
    return 0;
}

static int fs_mkdir(const char *path, mode_t mode) { PATH(path); CHECK(mkdir(real, mode)); }
static int fs_unlink(const char *path) { PATH(path); CHECK(unlink(real)); }
static int fs_rmdir(const char *path) { PATH(path); CHECK(rmdir(real)); }
static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    (void)fi; PATH(path); CHECK(chmod(real, mode));
}
static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    (void)fi; PATH(path); CHECK(lchown(real, uid, gid));
}
static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    if (fi) return ftruncate((int)fi->fh, size) == -1 ? -errno : 0;
    PATH(path); CHECK(truncate(real, size));
}
static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    if (fi) return futimens((int)fi->fh, tv) == -1 ? -errno : 0;
    PATH(path); CHECK(utimensat(AT_FDCWD, real, tv, AT_SYMLINK_NOFOLLOW));
}
static int fs_symlink(const char *target, const char *path) { PATH(path); CHECK(symlink(target, real)); }
static int fs_readlink(const char *path, char *buf, size_t size) {
    PATH(path);
    ssize_t n = readlink(real, buf, size - 1);
    if (n == -1) return -errno;
    buf[n] = 0;
    return 0;
}
static int fs_mknod(const char *path, mode_t mode, dev_t rdev) {
    PATH(path);
    if (S_ISFIFO(mode)) CHECK(mkfifo(real, mode));
    CHECK(mknod(real, mode, rdev));
}

/* Like sshfs and bindfs: rename flags (RENAME_NOREPLACE, RENAME_EXCHANGE) are refused. */
static int fs_rename(const char *from, const char *to, unsigned int flags) {
    if (flags) return -EINVAL;
    char a[PATH_MAX], b[PATH_MAX];
    full(a, from);
    full(b, to);
    CHECK(rename(a, b));
}

static int fs_link(const char *from, const char *to) {
    char a[PATH_MAX], b[PATH_MAX];
    full(a, from);
    full(b, to);
    CHECK(link(a, b));
}

static int fs_open(const char *path, struct fuse_file_info *fi) {
    PATH(path);
    int fd = open(real, fi->flags & ~O_NOFOLLOW);
    if (fd == -1) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    PATH(path);
    int fd = open(real, fi->flags, mode);
    if (fd == -1) return -errno;
    fi->fh = (uint64_t)fd;
    return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)path;
    ssize_t n = pread((int)fi->fh, buf, size, offset);
    return n == -1 ? -errno : (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)path;
    ssize_t n = pwrite((int)fi->fh, buf, size, offset);
    return n == -1 ? -errno : (int)n;
}

static int fs_statfs(const char *path, struct statvfs *st) { PATH(path); CHECK(statvfs(real, st)); }
static int fs_release(const char *path, struct fuse_file_info *fi) { (void)path; close((int)fi->fh); return 0; }
/* Whether an fsync of `path` hangs (PF_TESTFS_HANG_FSYNC names its last component). */
static int hangs(const char *path) {
    const char *names = getenv("PF_TESTFS_HANG_FSYNC");
    if (!names || !path) return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    for (const char *p = names; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, base, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    if (hangs(path)) {
        char release[PATH_MAX];
        full(release, "/.pf-testfs-release");
        fprintf(stderr, "pf-testfs: fsync of %s hangs\n", path);
        fflush(stderr);
        while (access(release, F_OK) != 0) usleep(50000);
    }
    CHECK(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}
static int fs_access(const char *path, int mask) { PATH(path); CHECK(access(real, mask)); }

static const struct fuse_operations ops = {
    .init = fs_init, .getattr = fs_getattr, .readdir = fs_readdir, .mkdir = fs_mkdir, .unlink = fs_unlink,
    .rmdir = fs_rmdir, .chmod = fs_chmod, .chown = fs_chown, .truncate = fs_truncate, .utimens = fs_utimens,
    .symlink = fs_symlink, .readlink = fs_readlink, .mknod = fs_mknod, .rename = fs_rename, .link = fs_link,
    .open = fs_open, .create = fs_create, .read = fs_read, .write = fs_write, .statfs = fs_statfs,
    .release = fs_release, .fsync = fs_fsync, .access = fs_access,
};

int main(int argc, char *argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BACKING MOUNTPOINT [fuse options]\n", argv[0]);
        return 2;
    }
    if (!realpath(argv[1], backing)) {
        perror(argv[1]);
        return 2;
    }
    /* fuse_main sees: program, mount point, options. */
    argv[1] = argv[0];
    return fuse_main(argc - 1, argv + 1, &ops, NULL);
}
