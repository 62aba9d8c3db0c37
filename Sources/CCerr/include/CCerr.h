#pragma once
/* What C++ libraries write to std::cerr, taken by the thread that called them. exempi writes
   the message of every error it raises there (set_error in exempi.cpp: "XML parsing failure",
   "Duplicate property or field node") and keeps only a number for its caller; a daemon's stderr
   is the journal, where such a line names no hot folder and no photo. Between pf_cerr_take and
   pf_cerr_taken a thread's writes to std::cerr are kept for it; other threads' writes, and this
   thread's outside the pair, go on to stderr as before. std::cerr is routed through this target
   once, when the process starts (before main, while it has one thread). */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts keeping this thread's writes to std::cerr (what was kept before is dropped). */
void pf_cerr_take(void);

/* Stops keeping them and copies what was kept into `buffer` (at most `size` - 1 bytes, then a
   NUL); returns the length of all that was kept, which may be more than was copied. */
size_t pf_cerr_taken(char *buffer, size_t size);

#ifdef __cplusplus
}
#endif
