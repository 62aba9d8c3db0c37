#pragma once
/* Linux file-system calls the Swift Glibc module does not show (they need _GNU_SOURCE). */

/* O_PATH: a descriptor that names a file without opening it for I/O (no FIFO blocking, no
   atime update); fstat works on it. */
extern const int pf_o_path;

/* renameat2(..., RENAME_NOREPLACE): an atomic rename that fails with EEXIST instead of
   replacing an existing name. Returns 0, or -1 with errno set. */
int pf_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
