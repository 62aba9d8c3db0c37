/* The resampler's inner loops, for SSE2 and for AVX2 (see CResample.h). Each AVX2 function is
   compiled for AVX2 alone (`target("avx2")`), so the library runs on any x86-64 and calls it
   only where pf_simd_cpu_has_avx2 said yes. On other architectures the SSE2 names are the
   portable scalar loops (same results). */

#include "CResample.h"

#include <stdlib.h>
#include <string.h>

/* The fixed point of StreamingResizer (ResampleWeights.swift). */
enum {
    ROW_SHIFT = 14 - 6,          /* weight bits − ring fraction bits */
    ROW_HALF = 1 << (ROW_SHIFT - 1),
    OUT_SHIFT = 14 + 6,          /* weight bits + ring fraction bits */
    OUT_HALF = 1 << (OUT_SHIFT - 1),
};

/* Pixel j as 4 Int16 (RGB: the fourth 0), read without going past the row. */
static inline uint64_t pixel_lanes(const uint8_t *row, int bpp, int j) {
    const uint8_t *p = row + (size_t)j * (size_t)bpp;
    uint64_t v = (uint64_t)p[0] | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 32;
    if (bpp == 4) v |= (uint64_t)p[3] << 48;
    return v;
}

/* Entries from..<pixels of both lanes, a value at a time (row ends; the portable build). */
static void pairs_scalar(const uint8_t *row0, const uint8_t *row1, int bpp, int pixels, int16_t *pairs,
                         int from) {
    for (int j = from; j < pixels; j++) {
        int n = j + 1 < pixels ? j + 1 : pixels - 1;
        for (int lane = 0; lane < 2; lane++) {
            const uint8_t *row = lane == 0 ? row0 : row1;
            uint64_t a = pixel_lanes(row, bpp, j), b = pixel_lanes(row, bpp, n);
            int16_t *d = pairs + (size_t)j * 16 + lane * 8;
            for (int c = 0; c < 4; c++) {
                d[2 * c] = (int16_t)(a >> (16 * c) & 0xFFFF);
                d[2 * c + 1] = (int16_t)(b >> (16 * c) & 0xFFFF);
            }
        }
    }
}

static inline int32_t weight_pair(const int16_t *w) {
    int32_t v;
    memcpy(&v, w, sizeof v);
    return v;
}

static inline uint8_t clamp8(int32_t v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void columns_scalar(const int16_t *const *rows, const int16_t *weights, int pairs, int from,
                           int count, uint8_t *out) {
    for (int i = from; i < count; i++) {
        int32_t sum = OUT_HALF;
        for (int k = 0; k < pairs; k++) {
            sum += (int32_t)weights[2 * k] * rows[k][2 * i] + (int32_t)weights[2 * k + 1] * rows[k][2 * i + 1];
        }
        out[i] = clamp8(sum >> OUT_SHIFT);
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

int pf_simd_cpu_has_avx2(void) {
    /* compiler-rt's cpu model also checks that the kernel saves the YMM registers (XGETBV). */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* Runs `call` with PF_STEPS a constant for the usual counts of tap pairs (2:1 to 4:1 shrinks, the
   web recipe's 1.97:1 is 7), so the compiler unrolls the tap loop; other counts run it as a loop. */
#define PF_BY_STEPS(n, call) \
    switch (n) { \
    case 1: { enum { PF_STEPS = 1 }; call; break; } \
    case 2: { enum { PF_STEPS = 2 }; call; break; } \
    case 3: { enum { PF_STEPS = 3 }; call; break; } \
    case 4: { enum { PF_STEPS = 4 }; call; break; } \
    case 5: { enum { PF_STEPS = 5 }; call; break; } \
    case 6: { enum { PF_STEPS = 6 }; call; break; } \
    case 7: { enum { PF_STEPS = 7 }; call; break; } \
    case 8: { enum { PF_STEPS = 8 }; call; break; } \
    case 9: { enum { PF_STEPS = 9 }; call; break; } \
    case 10: { enum { PF_STEPS = 10 }; call; break; } \
    case 11: { enum { PF_STEPS = 11 }; call; break; } \
    case 12: { enum { PF_STEPS = 12 }; call; break; } \
    default: { const int PF_STEPS = (n); call; break; } \
    }

/* MARK: SSE2 */

static inline __m128i pixel_sse2(const uint8_t *row, int bpp, int j, uint32_t mask) {
    uint32_t v;
    memcpy(&v, row + (size_t)j * (size_t)bpp, sizeof v);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)(v & mask)), _mm_setzero_si128());
}

/* Each pixel widened once and interleaved with its right neighbour; the two rows' halves of an
   entry are stored side by side. A 4-byte load at pixel j reads one byte past an RGB pixel: the
   last pixel is read value by value. */
static inline __attribute__((always_inline))
void pairs_sse2_body(const uint8_t *row0, const uint8_t *row1, const int bpp, int pixels, int16_t *pairs) {
    const uint32_t mask = bpp == 4 ? 0xFFFFFFFFu : 0x00FFFFFFu;
    int fast = pixels - 2;  /* entries whose two pixels both allow a 4-byte load */
    int j = 0;
    if (fast > 0) {
        __m128i a = pixel_sse2(row0, bpp, 0, mask), b = pixel_sse2(row1, bpp, 0, mask);
        for (; j < fast; j++) {
            __m128i na = pixel_sse2(row0, bpp, j + 1, mask), nb = pixel_sse2(row1, bpp, j + 1, mask);
            __m128i *d = (__m128i *)(pairs + (size_t)j * 16);
            _mm_store_si128(d, _mm_unpacklo_epi16(a, na));
            _mm_store_si128(d + 1, _mm_unpacklo_epi16(b, nb));
            a = na;
            b = nb;
        }
    }
    pairs_scalar(row0, row1, bpp, pixels, pairs, j);
}

static void pairs_sse2(const uint8_t *row0, const uint8_t *row1, int bpp, int pixels, int16_t *pairs) {
    if (bpp == 3) pairs_sse2_body(row0, row1, 3, pixels, pairs);
    else pairs_sse2_body(row0, row1, 4, pixels, pairs);
}

static inline __attribute__((always_inline))
void rows_sse2_body(const int16_t *pairs, const int32_t *starts, const int16_t *weights, int taps,
                    int width, int channels, int16_t *out, const int steps) {
    const __m128i half = _mm_set1_epi32(ROW_HALF);
    const int16_t *w = weights;
    for (int x = 0; x < width; x++, w += taps) {
        const __m128i *p = (const __m128i *)(pairs + (size_t)starts[x] * 16);
        __m128i a = half, b = half;
        for (int k = 0; k < steps; k++) {
            __m128i wk = _mm_set1_epi32(weight_pair(w + 2 * k));
            a = _mm_add_epi32(a, _mm_madd_epi16(_mm_load_si128(p + 4 * k), wk));
            b = _mm_add_epi32(b, _mm_madd_epi16(_mm_load_si128(p + 4 * k + 1), wk));
        }
        __m128i packed = _mm_packs_epi32(_mm_srai_epi32(a, ROW_SHIFT), _mm_srai_epi32(b, ROW_SHIFT));
        _mm_storeu_si128((__m128i *)(out + (size_t)x * channels * 2),
                         _mm_unpacklo_epi16(packed, _mm_unpackhi_epi64(packed, packed)));
    }
}

static void rows_sse2(const int16_t *pairs, const int32_t *starts, const int16_t *weights, int taps,
                      int width, int channels, int16_t *out) {
    PF_BY_STEPS(taps / 2, rows_sse2_body(pairs, starts, weights, 2 * PF_STEPS, width, channels, out, PF_STEPS))
}

/* 16 values a block, the last block overlapping the one before rather than running past. A pair
   row's interleaved values make each step one multiply-add per 4 values, no shuffles. */
static inline __attribute__((always_inline))
void columns_sse2_body(const int16_t *const *rows, const int16_t *weights, const int pairs, int count,
                       uint8_t *out) {
    const __m128i half = _mm_set1_epi32(OUT_HALF);
    for (int i = 0;; i += 16) {
        int at = i < count - 16 ? i : count - 16;
        __m128i s0 = half, s1 = half, s2 = half, s3 = half;
        for (int p = 0; p < pairs; p++) {
            const __m128i *r = (const __m128i *)(rows[p] + 2 * (size_t)at);
            __m128i w = _mm_set1_epi32(weight_pair(weights + 2 * p));
            s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_loadu_si128(r), w));
            s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_loadu_si128(r + 1), w));
            s2 = _mm_add_epi32(s2, _mm_madd_epi16(_mm_loadu_si128(r + 2), w));
            s3 = _mm_add_epi32(s3, _mm_madd_epi16(_mm_loadu_si128(r + 3), w));
        }
        __m128i lo = _mm_packs_epi32(_mm_srai_epi32(s0, OUT_SHIFT), _mm_srai_epi32(s1, OUT_SHIFT));
        __m128i hi = _mm_packs_epi32(_mm_srai_epi32(s2, OUT_SHIFT), _mm_srai_epi32(s3, OUT_SHIFT));
        _mm_storeu_si128((__m128i *)(out + at), _mm_packus_epi16(lo, hi));
        if (at == count - 16) break;
    }
}

static void columns_sse2(const int16_t *const *rows, const int16_t *weights, int pairs, int count,
                         uint8_t *out) {
    if (count < 16) {
        columns_scalar(rows, weights, pairs, 0, count, out);
        return;
    }
    PF_BY_STEPS(pairs, columns_sse2_body(rows, weights, PF_STEPS, count, out))
}

/* MARK: AVX2 */

/* Byte shuffles that turn a 16-byte load at pixel j into entry j + k (k < per: 4 for RGB, 3
   for 4-byte pixels): pixel j + k's and j + k + 1's values side by side, widened to 16 bits
   (index −1 gives 0; RGB's fourth value is 0). The same in both 128-bit halves. */
#define PF_PAIR_MASK(s, k, x0, x1) _mm256_setr_epi8( \
    (s)*(k), -1, (s)*((k)+1), -1, (s)*(k)+1, -1, (s)*((k)+1)+1, -1, \
    (s)*(k)+2, -1, (s)*((k)+1)+2, -1, (x0), -1, (x1), -1, \
    (s)*(k), -1, (s)*((k)+1), -1, (s)*(k)+1, -1, (s)*((k)+1)+1, -1, \
    (s)*(k)+2, -1, (s)*((k)+1)+2, -1, (x0), -1, (x1), -1)

/* A 256-bit load of each row, its low half at pixel j and its high half 12 bytes on (pixel
   j + per), shuffled into entries j+k and j+per+k of that row; the two rows' entries are then
   put side by side (one 128-bit permute each) and stored whole, 32 bytes. */
static inline __attribute__((always_inline, target("avx2")))
void pairs_avx2_body(const uint8_t *row0, const uint8_t *row1, const int bpp, int pixels, int16_t *pairs) {
    const int per = bpp == 3 ? 4 : 3;
    __m256i m[4];
    if (bpp == 3) {
        m[0] = PF_PAIR_MASK(3, 0, -1, -1);
        m[1] = PF_PAIR_MASK(3, 1, -1, -1);
        m[2] = PF_PAIR_MASK(3, 2, -1, -1);
        m[3] = PF_PAIR_MASK(3, 3, -1, -1);
    } else {
        m[0] = PF_PAIR_MASK(4, 0, 3, 7);
        m[1] = PF_PAIR_MASK(4, 1, 7, 11);
        m[2] = PF_PAIR_MASK(4, 2, 11, 15);
        m[3] = m[2];
    }
    const size_t rowBytes = (size_t)pixels * (size_t)bpp;
    int j = 0;
    /* Both loads inside the row: bytes bpp·j … bpp·j + 28. */
    for (; (size_t)j * (size_t)bpp + 28 <= rowBytes && j + 2 * per < pixels; j += 2 * per) {
        const uint8_t *s0 = row0 + (size_t)j * (size_t)bpp, *s1 = row1 + (size_t)j * (size_t)bpp;
        __m256i v0 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s0)),
                                             _mm_loadu_si128((const __m128i *)(s0 + 12)), 1);
        __m256i v1 = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)s1)),
                                             _mm_loadu_si128((const __m128i *)(s1 + 12)), 1);
        for (int k = 0; k < per; k++) {
            __m256i e0 = _mm256_shuffle_epi8(v0, m[k]), e1 = _mm256_shuffle_epi8(v1, m[k]);
            _mm256_store_si256((__m256i *)(pairs + (size_t)(j + k) * 16), _mm256_permute2x128_si256(e0, e1, 0x20));
            _mm256_store_si256((__m256i *)(pairs + (size_t)(j + per + k) * 16), _mm256_permute2x128_si256(e0, e1, 0x31));
        }
    }
    pairs_scalar(row0, row1, bpp, pixels, pairs, j);
}

__attribute__((target("avx2")))
static void pairs_avx2(const uint8_t *row0, const uint8_t *row1, int bpp, int pixels, int16_t *pairs) {
    if (bpp == 3) pairs_avx2_body(row0, row1, 3, pixels, pairs);
    else pairs_avx2_body(row0, row1, 4, pixels, pairs);
}

/* Both lanes of an entry are one 256-bit multiply-add with the tap pair's weights broadcast;
   two sums keep the adds apart. The two rows' results are interleaved value by value. */
static inline __attribute__((always_inline, target("avx2")))
void rows_avx2_body(const int16_t *pairs, const int32_t *starts, const int16_t *weights, int taps,
                    int width, int channels, int16_t *out, const int steps) {
    const __m256i half = _mm256_set1_epi32(ROW_HALF);
    const int16_t *w = weights;
    for (int x = 0; x < width; x++, w += taps) {
        const __m256i *p = (const __m256i *)(pairs + (size_t)starts[x] * 16);
        __m256i s0 = half, s1 = _mm256_setzero_si256();
        int k = 0;
        for (; k + 2 <= steps; k += 2) {
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k),
                                                        _mm256_set1_epi32(weight_pair(w + 2 * k))));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k + 2),
                                                        _mm256_set1_epi32(weight_pair(w + 2 * k + 2))));
        }
        if (k < steps) {
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k),
                                                        _mm256_set1_epi32(weight_pair(w + 2 * k))));
        }
        __m256i v = _mm256_srai_epi32(_mm256_add_epi32(s0, s1), ROW_SHIFT);
        v = _mm256_packs_epi32(v, v);
        _mm_storeu_si128((__m128i *)(out + (size_t)x * channels * 2),
                         _mm_unpacklo_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
    }
}

__attribute__((target("avx2")))
static void rows_avx2(const int16_t *pairs, const int32_t *starts, const int16_t *weights, int taps,
                      int width, int channels, int16_t *out) {
    PF_BY_STEPS(taps / 2, rows_avx2_body(pairs, starts, weights, 2 * PF_STEPS, width, channels, out, PF_STEPS))
}

/* rows_avx2 over two pair buffers (four source rows) at once: each tap pair's weights are loaded
   once for both, and the two pair rows' sums are packed together. The same sums: the same bytes. */
static inline __attribute__((always_inline, target("avx2")))
void rows4_avx2_body(const int16_t *pairs0, const int16_t *pairs1, const int32_t *starts, const int16_t *weights,
                     int taps, int width, int channels, int16_t *out0, int16_t *out1, const int steps) {
    const __m256i half = _mm256_set1_epi32(ROW_HALF);
    const int16_t *w = weights;
    for (int x = 0; x < width; x++, w += taps) {
        const __m256i *p = (const __m256i *)(pairs0 + (size_t)starts[x] * 16);
        const __m256i *q = (const __m256i *)(pairs1 + (size_t)starts[x] * 16);
        __m256i s0 = half, s1 = _mm256_setzero_si256(), t0 = half, t1 = _mm256_setzero_si256();
        int k = 0;
        for (; k + 2 <= steps; k += 2) {
            __m256i w0 = _mm256_set1_epi32(weight_pair(w + 2 * k)), w1 = _mm256_set1_epi32(weight_pair(w + 2 * k + 2));
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k), w0));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k + 2), w1));
            t0 = _mm256_add_epi32(t0, _mm256_madd_epi16(_mm256_load_si256(q + 2 * k), w0));
            t1 = _mm256_add_epi32(t1, _mm256_madd_epi16(_mm256_load_si256(q + 2 * k + 2), w1));
        }
        if (k < steps) {
            __m256i w0 = _mm256_set1_epi32(weight_pair(w + 2 * k));
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_load_si256(p + 2 * k), w0));
            t0 = _mm256_add_epi32(t0, _mm256_madd_epi16(_mm256_load_si256(q + 2 * k), w0));
        }
        /* one pack for both: per 128-bit half, the first pair row's 4 values then the second's */
        __m256i v = _mm256_packs_epi32(_mm256_srai_epi32(_mm256_add_epi32(s0, s1), ROW_SHIFT),
                                       _mm256_srai_epi32(_mm256_add_epi32(t0, t1), ROW_SHIFT));
        __m128i lane0 = _mm256_castsi256_si128(v), lane1 = _mm256_extracti128_si256(v, 1);
        _mm_storeu_si128((__m128i *)(out0 + (size_t)x * channels * 2), _mm_unpacklo_epi16(lane0, lane1));
        _mm_storeu_si128((__m128i *)(out1 + (size_t)x * channels * 2), _mm_unpackhi_epi16(lane0, lane1));
    }
}

__attribute__((target("avx2")))
static void rows4_avx2(const int16_t *pairs0, const int16_t *pairs1, const int32_t *starts, const int16_t *weights,
                       int taps, int width, int channels, int16_t *out0, int16_t *out1) {
    PF_BY_STEPS(taps / 2, rows4_avx2_body(pairs0, pairs1, starts, weights, 2 * PF_STEPS, width, channels, out0, out1,
                                          PF_STEPS))
}

/* 32 values a block. The packs work within 128-bit halves, so the bytes come out in groups of 4
   as 0 8 16 24 | 4 12 20 28 and one permute puts them in order. */
static inline __attribute__((always_inline, target("avx2")))
void columns_avx2_body(const int16_t *const *rows, const int16_t *weights, const int pairs, int count,
                       uint8_t *out) {
    const __m256i half = _mm256_set1_epi32(OUT_HALF);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0;; i += 32) {
        int at = i < count - 32 ? i : count - 32;
        __m256i s0 = half, s1 = half, s2 = half, s3 = half;
        for (int p = 0; p < pairs; p++) {
            const __m256i *r = (const __m256i *)(rows[p] + 2 * (size_t)at);
            __m256i w = _mm256_set1_epi32(weight_pair(weights + 2 * p));
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_loadu_si256(r), w));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_loadu_si256(r + 1), w));
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(_mm256_loadu_si256(r + 2), w));
            s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(_mm256_loadu_si256(r + 3), w));
        }
        __m256i lo = _mm256_packs_epi32(_mm256_srai_epi32(s0, OUT_SHIFT), _mm256_srai_epi32(s1, OUT_SHIFT));
        __m256i hi = _mm256_packs_epi32(_mm256_srai_epi32(s2, OUT_SHIFT), _mm256_srai_epi32(s3, OUT_SHIFT));
        __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(lo, hi), order);
        _mm256_storeu_si256((__m256i *)(out + at), bytes);
        if (at == count - 32) break;
    }
}

__attribute__((target("avx2")))
static void columns_avx2(const int16_t *const *rows, const int16_t *weights, int pairs, int count,
                         uint8_t *out) {
    if (count < 32) {
        columns_sse2(rows, weights, pairs, count, out);
        return;
    }
    PF_BY_STEPS(pairs, columns_avx2_body(rows, weights, PF_STEPS, count, out))
}

/* MARK: box shrink (previews) */

/* 16-bit column sums of a block's rows (at most 16 · 255). */
static void box_add_sse2(const uint8_t *row, uint16_t *sums, int count, int first) {
    const __m128i zero = _mm_setzero_si128();
    int i = 0;
    for (; i + 16 <= count; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(row + i));
        __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
        __m128i *s = (__m128i *)(sums + i);
        if (!first) {
            lo = _mm_add_epi16(lo, _mm_loadu_si128(s));
            hi = _mm_add_epi16(hi, _mm_loadu_si128(s + 1));
        }
        _mm_storeu_si128(s, lo);
        _mm_storeu_si128(s + 1, hi);
    }
    for (; i < count; i++) sums[i] = (uint16_t)(first ? row[i] : sums[i] + row[i]);
}

__attribute__((target("avx2")))
static void box_add_avx2(const uint8_t *row, uint16_t *sums, int count, int first) {
    int i = 0;
    for (; i + 16 <= count; i += 16) {
        __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(row + i)));
        __m256i *s = (__m256i *)(sums + i);
        if (!first) v = _mm256_add_epi16(v, _mm256_loadu_si256(s));
        _mm256_storeu_si256(s, v);
    }
    for (; i < count; i++) sums[i] = (uint16_t)(first ? row[i] : sums[i] + row[i]);
}

/* Every position's sum of `factor` values 3 apart (one channel of `factor` neighbouring pixels),
   rounded and shifted, as bytes (16-bit arithmetic: at most 16 · 16 · 255 + 128 fits); then each
   block's first pixel is kept. */
static inline __attribute__((always_inline))
void box_row_body(const uint16_t *sums, int blocks, const int factor, int shift, uint8_t *averages,
                  uint8_t *out) {
    const int m = (blocks - 1) * factor * 3 + 3;   /* up to the last block's first pixel */
    const __m128i half = _mm_set1_epi16((short)(1 << (shift - 1)));
    const __m128i by = _mm_cvtsi32_si128(shift);
    int i = 0;
    for (; i + 8 <= m; i += 8) {
        __m128i v = half;
        for (int k = 0; k < factor; k++) v = _mm_add_epi16(v, _mm_loadu_si128((const __m128i *)(sums + i + 3 * k)));
        v = _mm_srl_epi16(v, by);
        _mm_storel_epi64((__m128i *)(averages + i), _mm_packus_epi16(v, v));
    }
    for (; i < m; i++) {
        unsigned v = 1u << (shift - 1);
        for (int k = 0; k < factor; k++) v += sums[i + 3 * k];
        averages[i] = (uint8_t)(v >> shift);
    }
    for (int x = 0; x < blocks; x++) {
        const uint8_t *a = averages + (size_t)x * factor * 3;
        out[3 * x] = a[0];
        out[3 * x + 1] = a[1];
        out[3 * x + 2] = a[2];
    }
}

static void box_row(const uint16_t *sums, int blocks, int factor, int shift, uint8_t *averages, uint8_t *out) {
    if (blocks <= 0) return;
    switch (factor) {
    case 2: box_row_body(sums, blocks, 2, shift, averages, out); break;
    case 4: box_row_body(sums, blocks, 4, shift, averages, out); break;
    default: box_row_body(sums, blocks, factor, shift, averages, out); break;
    }
}

void pf_box_add(int simd, const uint8_t *row, uint16_t *sums, int count, int first) {
    if (simd == PF_SIMD_AVX2) box_add_avx2(row, sums, count, first);
    else box_add_sse2(row, sums, count, first);
}

/* AVX2 build: the sums halved in place, neighbouring pixels added pairwise (exact: at most
   16 · 16 · 255 fits 16 bits) until each holds a block, then rounded and shifted once: the same
   bytes as box_row, without its sums at every position or its pick of the blocks' first pixels
   a byte at a time. A step makes pixels p, p + 1 from pixels 2p … 2p + 3: two 8-value loads, 6
   values apart, each split into its two pixels (the 64-bit halves), then added; it writes 8
   values (the last 2 are the next step's) below what later steps read. */
__attribute__((target("avx2")))
static void box_row_avx2(uint16_t *sums, int blocks, int factor, int shift, uint8_t *out) {
    const __m128i split = _mm_setr_epi8(0, 1, 2, 3, 4, 5, -1, -1, 6, 7, 8, 9, 10, 11, -1, -1);
    int pixels = blocks * factor;
    for (; factor > 1; factor /= 2) {
        const int halves = pixels / 2;
        int p = 0;
        /* the step's second load reads values 6p + 6 … 6p + 13: inside the 3 · pixels values */
        for (; p + 2 <= halves && 6 * p + 14 <= 3 * pixels; p += 2) {
            __m128i lo = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(sums + 6 * p)), split);
            __m128i hi = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(sums + 6 * p + 6)), split);
            __m128i sum = _mm_add_epi16(_mm_unpacklo_epi64(lo, hi), _mm_unpackhi_epi64(lo, hi));
            _mm_storeu_si128((__m128i *)(sums + 3 * p),
                             _mm_shuffle_epi8(sum, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1)));
        }
        for (; p < halves; p++)
            for (int c = 0; c < 3; c++) sums[3 * p + c] = (uint16_t)(sums[6 * p + c] + sums[6 * p + 3 + c]);
        pixels = halves;
    }
    const int count = blocks * 3;
    const __m128i half = _mm_set1_epi16((short)(1 << (shift - 1)));
    const __m128i by = _mm_cvtsi32_si128(shift);
    int i = 0;
    for (; i + 8 <= count; i += 8) {
        __m128i v = _mm_srl_epi16(_mm_add_epi16(_mm_loadu_si128((const __m128i *)(sums + i)), half), by);
        _mm_storel_epi64((__m128i *)(out + i), _mm_packus_epi16(v, v));
    }
    for (; i < count; i++) out[i] = (uint8_t)((sums[i] + (1u << (shift - 1))) >> shift);
}

void pf_box_row(int simd, uint16_t *sums, int blocks, int factor, int shift, uint8_t *averages,
                uint8_t *out) {
    if (blocks <= 0) return;
    if (simd == PF_SIMD_AVX2) box_row_avx2(sums, blocks, factor, shift, out);
    else box_row(sums, blocks, factor, shift, averages, out);
}

void pf_resample_pairs(int simd, const uint8_t *row0, const uint8_t *row1, int bytes_per_pixel, int pixels,
                       int16_t *pairs) {
    if (simd == PF_SIMD_AVX2) pairs_avx2(row0, row1, bytes_per_pixel, pixels, pairs);
    else pairs_sse2(row0, row1, bytes_per_pixel, pixels, pairs);
}

void pf_resample_rows(int simd, const int16_t *pairs, const int32_t *starts, const int16_t *weights,
                      int taps, int width, int channels, int16_t *out) {
    if (simd == PF_SIMD_AVX2) rows_avx2(pairs, starts, weights, taps, width, channels, out);
    else rows_sse2(pairs, starts, weights, taps, width, channels, out);
}

void pf_resample_rows2(int simd, const int16_t *pairs0, const int16_t *pairs1, const int32_t *starts,
                       const int16_t *weights, int taps, int width, int channels, int16_t *out0, int16_t *out1) {
    if (simd == PF_SIMD_AVX2) {
        rows4_avx2(pairs0, pairs1, starts, weights, taps, width, channels, out0, out1);
    } else {
        rows_sse2(pairs0, starts, weights, taps, width, channels, out0);
        rows_sse2(pairs1, starts, weights, taps, width, channels, out1);
    }
}

void pf_resample_columns(int simd, const int16_t *const *rows, const int16_t *weights, int pairs,
                         int count, uint8_t *out) {
    if (simd == PF_SIMD_AVX2) columns_avx2(rows, weights, pairs, count, out);
    else columns_sse2(rows, weights, pairs, count, out);
}

#else  /* not x86-64: the same arithmetic, a value at a time */

int pf_simd_cpu_has_avx2(void) { return 0; }

void pf_resample_pairs(int simd, const uint8_t *row0, const uint8_t *row1, int bytes_per_pixel, int pixels,
                       int16_t *pairs) {
    (void)simd;
    pairs_scalar(row0, row1, bytes_per_pixel, pixels, pairs, 0);
}

void pf_resample_rows(int simd, const int16_t *pairs, const int32_t *starts, const int16_t *weights,
                      int taps, int width, int channels, int16_t *out) {
    (void)simd;
    for (int x = 0; x < width; x++) {
        for (int lane = 0; lane < 2; lane++) {
            for (int c = 0; c < 4; c++) {
                int32_t sum = ROW_HALF;
                for (int k = 0; k < taps / 2; k++) {
                    const int16_t *e = pairs + (size_t)(starts[x] + 2 * k) * 16 + lane * 8 + 2 * c;
                    sum += (int32_t)e[0] * weights[x * taps + 2 * k] + (int32_t)e[1] * weights[x * taps + 2 * k + 1];
                }
                sum >>= ROW_SHIFT;
                out[((size_t)x * channels + c) * 2 + lane] = (int16_t)(sum < -32768 ? -32768 : sum > 32767 ? 32767 : sum);
            }
        }
    }
}

void pf_resample_rows2(int simd, const int16_t *pairs0, const int16_t *pairs1, const int32_t *starts,
                       const int16_t *weights, int taps, int width, int channels, int16_t *out0, int16_t *out1) {
    pf_resample_rows(simd, pairs0, starts, weights, taps, width, channels, out0);
    pf_resample_rows(simd, pairs1, starts, weights, taps, width, channels, out1);
}

void pf_resample_columns(int simd, const int16_t *const *rows, const int16_t *weights, int pairs,
                         int count, uint8_t *out) {
    (void)simd;
    columns_scalar(rows, weights, pairs, 0, count, out);
}

void pf_box_add(int simd, const uint8_t *row, uint16_t *sums, int count, int first) {
    (void)simd;
    for (int i = 0; i < count; i++) sums[i] = (uint16_t)(first ? row[i] : sums[i] + row[i]);
}

void pf_box_row(int simd, const uint16_t *sums, int blocks, int factor, int shift, uint8_t *averages,
                uint8_t *out) {
    (void)simd;
    (void)averages;
    for (int x = 0; x < blocks; x++) {
        for (int c = 0; c < 3; c++) {
            unsigned v = 1u << (shift - 1);
            for (int k = 0; k < factor; k++) v += sums[(size_t)(x * factor + k) * 3 + c];
            out[3 * x + c] = (uint8_t)(v >> shift);
        }
    }
}

#endif

