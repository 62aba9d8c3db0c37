#pragma once
/* malloc tuning that Swift's Glibc module does not show (malloc.h). */

/* Allocations of at least `bytes` get their own mapping and go back to the system when
   freed; fixing the threshold also stops glibc from raising it after the first large free
   (which would keep photo-sized buffers in the heap, and the heap's pages resident). */
void pf_malloc_map_from(int bytes);
