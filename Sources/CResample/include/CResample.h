#pragma once
/* The resampler's inner loops (Pixels/Resample/StreamingResizer.swift), in two builds of the
   same integer arithmetic: SSE2 (every x86-64) and AVX2, chosen once at run time by CPU feature.
   Both give the same bytes: sums of 16-bit products in 32 bits, shifted and saturated the same
   way, so only the number of values per instruction differs.

   Fixed point, as StreamingResizer documents: weights Int16 with 14 fractional bits; the
   horizontally resampled rows Int16 with 6 fractional bits; output bytes rounded and clamped.

   The horizontal pass takes rows two at a time through a "pair buffer": entry j holds, for
   each of the two rows (lanes 0 and 1), the 8 Int16 `r[j] r[j+1] g[j] g[j+1] b[j] b[j+1]
   x[j] x[j+1]` (x is alpha for 4-byte pixels, 0 for RGB), so every two filter taps are one
   16-bit multiply-add per row. Entries are 32 bytes, lane 0 first; the buffer must be 32-byte
   aligned. It writes the two filtered rows interleaved value by value (a "pair row"), so the
   vertical pass multiplies-and-adds two source rows at once straight from memory. */

#include <stdint.h>

/* Instruction sets the kernels are built for: the `simd` argument of every function below
   (the Swift side chooses, ResampleKernels.swift). AVX2 only where pf_simd_cpu_has_avx2. */
enum {
    PF_SIMD_SSE2 = 1,
    PF_SIMD_AVX2 = 2,
};

/* Whether this CPU (and the kernel, for the wide registers) runs AVX2. */
int pf_simd_cpu_has_avx2(void);

/* Fills `pixels` pair-buffer entries from two rows (lane 0 from `row0`, lane 1 from `row1`; the
   same row twice for one alone) of `pixels` pixels of `bytes_per_pixel` (3: RGB, 4: RGBA or
   RGBX) bytes. The last entry pairs the last pixel with itself. */
void pf_resample_pairs(int simd, const uint8_t *row0, const uint8_t *row1, int bytes_per_pixel, int pixels,
                       int16_t *pairs);

/* The horizontal filter over both lanes of a pair buffer, into one "pair row": the two rows'
   values interleaved, value i of lane L at out[2 * i + L]. Output pixel x of a lane is the sum
   over taps t of weights[x * taps + t] times the lane's pixel starts[x] + t, plus the rounding
   half, shifted right by 8 and saturated to Int16; a pixel is written as 4 values (channels 3
   or 4: for RGB the fourth lands in the next pixel's place or, after the last pixel, in 8
   Int16 of slack the pair row must have). `taps` must be even. */
void pf_resample_rows(int simd, const int16_t *pairs, const int32_t *starts, const int16_t *weights,
                      int taps, int width, int channels, int16_t *out);

/* pf_resample_rows over two pair buffers (four rows) at once, `pairs0` into `out0` and `pairs1`
   into `out1`, the same bytes: the AVX2 build loads each tap pair's weights once for both. */
void pf_resample_rows2(int simd, const int16_t *pairs0, const int16_t *pairs1, const int32_t *starts,
                       const int16_t *weights, int taps, int width, int channels, int16_t *out0, int16_t *out1);

/* The vertical filter over `pairs` pair rows (two source rows each, interleaved as
   pf_resample_rows writes them): `count` output bytes, byte i the sum over pairs k of
   weights[2k] · rows[k][2i] + weights[2k+1] · rows[k][2i+1], plus the rounding half, shifted
   right by 20, clamped to 0…255. A row outside the window has weight 0. */
void pf_resample_columns(int simd, const int16_t *const *rows, const int16_t *weights, int pairs,
                         int count, uint8_t *out);

/* The preview's box shrink (BoxShrink.swift): adds `count` bytes of a row to 16-bit column sums
   (`first`: the block's first row sets them). */
void pf_box_add(int simd, const uint8_t *row, uint16_t *sums, int count, int first);

/* Averages `blocks` whole blocks of `factor` RGB pixels of column sums (factor × factor values a
   channel, at most 16 × 16): each rounded, shifted right by `shift` (log2 of factor²), into
   `out` (3 bytes a block). `averages` is scratch of `blocks · factor · 3` bytes. The sums of those
   blocks are used up (the AVX2 build adds them in place); the sums past them (a narrower block
   at the right edge) are left as they were. */
void pf_box_row(int simd, uint16_t *sums, int blocks, int factor, int shift, uint8_t *averages,
                uint8_t *out);

/* Not the resampler's: harmonize's per-channel correction (Pixels/Colour/LightCurve.swift), on
   the resampler's output rows (in place: `from` is `to`) or on held rows on their way into a
   line (one pass instead of a copy and a pass). Each of `count` pixels of `channels` (3, or 4:
   the fourth, alpha, copied) bytes of `from` into `to`: R through table[0…255], G through
   table[256…511], B through table[512…767]. `vbmi`: with AVX-512 VBMI (where
   pf_table_cpu_has_vbmi said yes; RGB only), 64 pixels a step, the same bytes. */
void pf_table_rgb_copy(int vbmi, const uint8_t *from, uint8_t *to, int count, int channels, const uint8_t *table);
/* 1 when the CPU (and the kernel) has AVX-512 VBMI and BW, else 0. */
int pf_table_cpu_has_vbmi(void);

