#pragma once
/* The scaled inverse DCTs of a JPEG decoded at M/8 (M = 3, 5, 6, 7), in place of libjpeg-turbo's
   own, which are plain C at those sizes and slower than its full-size SIMD decode. libjpeg still
   entropy-decodes, upsamples and converts colour; each block's IDCT is ours (jpeg_glue.c puts
   these in libjpeg's table of IDCT methods once the decode has started). Private to CCodecs. */
#include "jpeg_glue.h"

#include <stdint.h>
#include <stdio.h>
#include <jpeglib.h>

/* One component's weights for an n × n IDCT, made from its quantisation table by
   pf_idct_prepare and read by every block of the component. 32-byte aligned
   (aligned_alloc(32, sizeof(pf_idct_table))). */
typedef struct pf_idct_table {
    /* The horizontal pass, in 16-bit fixed point: row u, coefficient pair p (v = 2p, 2p + 1),
       output column m: w[u][p][2m + (v & 1)] = Q(u,v) · C(u)C(v)/4 · cos((2m + 1)vπ / 2n) · 2^s,
       s as large as keeps every weight within 16 bits. */
    int16_t w[8][4][32] __attribute__((aligned(32)));
    /* The vertical pass, in float: a[y][u] = cos((2y + 1)uπ / 2n). */
    float a[16][8];
    /* 2^-s: the horizontal sums back to sample values. */
    float unscale;
} pf_idct_table;

/* Fills `table` for n × n outputs (a size pf_idct_kernel has a kernel for) from a quantisation table in natural
   order; NULL (a component whose data never came) makes grey blocks, as libjpeg does. */
void pf_idct_prepare(pf_idct_table *table, int n, const UINT16 *quant);

/* The kernel for n × n outputs built for `simd` (PF_JPEG_SIMD_*), with libjpeg's IDCT signature:
   for a block at M/8 (n = 3, 5, 6, 7), or a chroma block of a file whose chroma is halved, which
   libjpeg scales up in the IDCT at 2M/8 (n = 6, 10, 12, 14) rather than upsampling it. NULL for
   other sizes (1, 2, 4, 8: libjpeg's SIMD IDCTs) and off x86-64. It reads its table through pf_idct_table_for. Each writes the n × n samples
   of its block, and (where the row has room: libjpeg's rows are width_in_blocks · n samples)
   up to 8 or 16 − n samples after them, which belong to the next block of the row: libjpeg
   makes a row's blocks left to right, so they are written again before anyone reads them. */
typedef void (*pf_idct_method)(j_decompress_ptr, jpeg_component_info *, JCOEFPTR, JSAMPARRAY, JDIMENSION);
pf_idct_method pf_idct_kernel(int n, int simd);

/* The components a scaled decode gives our own IDCT: grey, YCbCr, CMYK and YCCK have at most 4. */
#define PF_IDCT_COMPONENTS 4

/* A component's table. The decoder is libjpeg's client_data and begins with its tables, one
   pointer a component (jpeg_glue.c): read in place by every block, not through a call. */
static inline const pf_idct_table *pf_idct_table_for(j_decompress_ptr cinfo, int component) {
    return ((pf_idct_table *const *)cinfo->client_data)[component];
}
