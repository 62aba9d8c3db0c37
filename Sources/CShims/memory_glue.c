#include <malloc.h>
#include "memory_glue.h"

void pf_malloc_map_from(int bytes) {
    mallopt(M_MMAP_THRESHOLD, bytes);
}
