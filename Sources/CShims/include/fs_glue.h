#pragma once
/* Linux file-system calls the Swift Glibc module does not show (they need _GNU_SOURCE, or
   live in headers it leaves out). */

/* O_PATH: a descriptor that names a file without opening it for I/O (no FIFO blocking, no
   atime update); fstat works on it. */
extern const int pf_o_path;

/* renameat2(..., RENAME_NOREPLACE): an atomic rename that fails with EEXIST instead of
   replacing an existing name. Returns 0, or -1 with errno set. */
int pf_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);

/* fstatfs/statfs, only the file system's type (f_type, its magic number: 0x6969 = NFS).
   Return 0, or -1 with errno set. */
int pf_fstatfs_type(int fd, unsigned int *type);
int pf_statfs_type(const char *path, unsigned int *type);

/* prctl(PR_SET_NAME): names the calling thread (15 bytes at most), as `top -H` and
   /proc/<pid>/task/<tid>/comm show it. Returns 0, or -1 with errno set. */
int pf_set_thread_name(const char *name);
/* The calling thread's id (gettid), for setpriority on one thread. */
int pf_thread_id(void);

/* fstat that asks the file system itself, past the client's attribute cache:
   statx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC) (NFS, CIFS and FUSE ask the server; local
   file systems answer as fstat), as a struct stat; plain fstat where statx is missing.
   Returns 0, or -1 with errno set. */
int pf_fstat_sync(int fd, void *out /* struct stat * */);

/* fsetxattr and lgetxattr (<sys/xattr.h>, which the Glibc module leaves out): a file's extended
   attributes. Return 0 (set) or the value's length (get), or -1 with errno set. */
int pf_fsetxattr(int fd, const char *name, const void *value, unsigned long size);
long pf_lgetxattr(const char *path, const char *name, void *value, unsigned long size);
