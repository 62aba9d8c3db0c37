/* The scaled IDCTs (jpeg_idct.h): an n × n block from the first K = min(n, 8) coefficients of each
   axis, the continuous cosine series of the 8 × 8 block sampled at n points a side (what
   libjpeg's own jidctint.c computes at these sizes, and the same samples to ±1).

   out = A · (Q ∘ X) · Aᵀ, A[y][u] = C(u)/2 · cos((2y + 1)uπ / 2n). The horizontal pass goes
   through the block's rows in 16-bit fixed point: two coefficients of a row, side by side in
   memory, are broadcast as one 32-bit value and multiplied-and-added by pmaddwd against their
   two weights for every output column at once (the dequantisation is in the weights). The
   vertical pass is in float, with the even/odd symmetry of A (rows y and n − 1 − y share their
   products). Samples are rounded half up and saturated by the packs.

   Most blocks are far from full: chroma is often one flat value, and smooth areas keep a few
   low frequencies. Each block's extent (1 + its last row or column within K × K holding a
   coefficient) picks a body unrolled for that many rows and columns.

   Every function comes in two builds of the same arithmetic, SSE2 and AVX2 (`target("avx2")`):
   integer sums, then float products and sums in one fixed order, so both give the same bytes
   (no FMA: -ffp-contract=off). */
#include "jpeg_idct.h"

#include <math.h>

/* The bodies pass 8- and 16-float vectors between inline functions: never across a call, so the
   ABI note clang makes for the SSE2 build does not apply. */
#pragma clang diagnostic ignored "-Wpsabi"
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef int32_t v16i __attribute__((vector_size(64)));

#define INLINE static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2")))

void pf_idct_prepare(pf_idct_table *t, int n, const UINT16 *quant) {
    memset(t, 0, sizeof *t);
    int k = n < 8 ? n : 8;
    double largest = 0;
    for (int u = 0; u < k && quant != NULL; u++)
        for (int v = 0; v < k; v++) {
            double q = quant[u * 8 + v] * (u ? 1 : M_SQRT1_2) * (v ? 1 : M_SQRT1_2) / 4;
            if (q > largest) largest = q;
        }
    int s = 0;
    while (s < 24 && largest * (double)(1 << (s + 1)) <= 32767) s++;
    for (int u = 0; u < k && quant != NULL; u++)
        for (int v = 0; v < k; v++) {
            double q = quant[u * 8 + v] * (u ? 1 : M_SQRT1_2) * (v ? 1 : M_SQRT1_2) / 4 * (double)(1 << s);
            for (int m = 0; m < n; m++)
                t->w[u][v / 2][2 * m + (v & 1)] = (int16_t)lrint(q * cos((2 * m + 1) * v * M_PI / (2.0 * n)));
        }
    for (int y = 0; y < n; y++)
        for (int u = 0; u < k; u++) t->a[y][u] = (float)cos((2 * y + 1) * u * M_PI / (2.0 * n));
    t->unscale = (float)(1.0 / (double)(1 << s));
}

/* 1 + the last row or column within K × K that holds a nonzero coefficient (1 for a flat block).
   The rows are packed to bytes two at a time (saturating: nonzero stays nonzero), so one byte
   mask a pair of rows gives a bit per coefficient. */
INLINE int block_extent(const JCOEF *coef, const int K) {
    uint64_t zero = 0;
    for (int u = 0; u < K; u += 2) {
        __m128i a = _mm_loadu_si128((const __m128i *)(coef + 8 * u));
        __m128i b = u + 1 < K ? _mm_loadu_si128((const __m128i *)(coef + 8 * u + 8)) : _mm_setzero_si128();
        __m128i bytes = _mm_packs_epi16(a, b);
        zero |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_setzero_si128())) << (8 * u);
    }
    const uint64_t columns = (1u << K) - 1;
    uint64_t region = 0;
    for (int u = 0; u < K; u++) region |= columns << (8 * u);
    uint64_t nonzero = ~zero & region;
    if (nonzero <= 1) return 1;
    int row = (63 - __builtin_clzll(nonzero)) >> 3;
    uint64_t c = nonzero | nonzero >> 32;
    c |= c >> 16;
    c |= c >> 8;
    int column = 31 - __builtin_clz((unsigned)(c & 0xFF));
    return (row > column ? row : column) + 1;
}

INLINE int32_t pair_at(const JCOEF *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A pair of coefficients times its weights for 8 (or 16) output columns. */
INLINE v8i madd8_sse2(int32_t pair, const int16_t *w) {
    __m128i b = _mm_set1_epi32(pair);
    __m128i lo = _mm_madd_epi16(b, _mm_load_si128((const __m128i *)w));
    __m128i hi = _mm_madd_epi16(b, _mm_load_si128((const __m128i *)(w + 8)));
    return __builtin_shufflevector((v4i)lo, (v4i)hi, 0, 1, 2, 3, 4, 5, 6, 7);
}
INLINE AVX2 v8i madd8_avx2(int32_t pair, const int16_t *w) {
    return (v8i)_mm256_madd_epi16(_mm256_set1_epi32(pair), _mm256_load_si256((const __m256i *)w));
}
INLINE v16i madd16_sse2(int32_t pair, const int16_t *w) {
    v8i lo = madd8_sse2(pair, w), hi = madd8_sse2(pair, w + 16);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
INLINE AVX2 v16i madd16_avx2(int32_t pair, const int16_t *w) {
    v8i lo = madd8_avx2(pair, w), hi = madd8_avx2(pair, w + 16);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/* Samples to bytes, saturated: two rows of 8 (row 0 in bytes 0–7), or one row of 16. */
INLINE __m128i pack8_sse2(v8f r0, v8f r1) {
    v8i a = __builtin_convertvector(r0, v8i), b = __builtin_convertvector(r1, v8i);
    __m128i x = _mm_packs_epi32((__m128i)__builtin_shufflevector(a, a, 0, 1, 2, 3),
                                (__m128i)__builtin_shufflevector(a, a, 4, 5, 6, 7));
    __m128i y = _mm_packs_epi32((__m128i)__builtin_shufflevector(b, b, 0, 1, 2, 3),
                                (__m128i)__builtin_shufflevector(b, b, 4, 5, 6, 7));
    return _mm_packus_epi16(x, y);
}
INLINE AVX2 __m128i pack8_avx2(v8f r0, v8f r1) {
    __m256i p = _mm256_packs_epi32(_mm256_cvttps_epi32((__m256)r0), _mm256_cvttps_epi32((__m256)r1));
    p = _mm256_permute4x64_epi64(p, 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}
INLINE __m128i pack16_sse2(v16f r) {
    return pack8_sse2(__builtin_shufflevector(r, r, 0, 1, 2, 3, 4, 5, 6, 7),
                      __builtin_shufflevector(r, r, 8, 9, 10, 11, 12, 13, 14, 15));
}
INLINE AVX2 __m128i pack16_avx2(v16f r) {
    return pack8_avx2(__builtin_shufflevector(r, r, 0, 1, 2, 3, 4, 5, 6, 7),
                      __builtin_shufflevector(r, r, 8, 9, 10, 11, 12, 13, 14, 15));
}

/* Writes n samples from byte `from` of `v`; with `wide`, all 8 (or 16) the vector holds. */
INLINE void store_row(JSAMPROW out, __m128i v, int from, int n, int wide) {
    if (wide && n <= 8) {
        if (from) _mm_storeh_pd((double *)out, _mm_castsi128_pd(v)); else _mm_storel_epi64((__m128i *)out, v);
    } else if (wide) {
        _mm_storeu_si128((__m128i *)out, v);
    } else {
        uint8_t bytes[16];
        _mm_storeu_si128((__m128i *)bytes, v);
        memcpy(out, bytes + from, (size_t)n);
    }
}

/* A block with nothing but its DC coefficient: one value everywhere. */
INLINE void flat_block(const int n, const pf_idct_table *t, const JCOEF *coef, JSAMPARRAY rows, JDIMENSION col,
                       int wide) {
    float value = (float)((int32_t)coef[0] * t->w[0][0][0]) * t->unscale + 128.5f;
    __m128i v = _mm_set1_epi8((char)(value <= 0 ? 0 : value >= 255 ? 255 : (int)value));
    for (int y = 0; y < n; y++) store_row(rows[y] + col, v, 0, n, wide);
}

/* The rows of the vertical pass: out[y] = Σ_u a[y][u] e[u] over the first k rows of the
   horizontal pass, rows y and n − 1 − y from one even and one odd sum. */
#define VERTICAL(VF, n, k, t, e, out) \
    do { \
        for (int y = 0; y < (n) / 2; y++) { \
            VF even = e[0], odd = e[1] * (t)->a[y][1]; \
            for (int u = 2; u < (k); u += 2) even += (t)->a[y][u] * e[u]; \
            for (int u = 3; u < (k); u += 2) odd += (t)->a[y][u] * e[u]; \
            out[y] = even + odd; \
            out[(n) - 1 - y] = even - odd; \
        } \
        if ((n) & 1) { /* the middle row: cos(uπ/2), no odd part */ \
            VF middle = e[0]; \
            for (int u = 2; u < (k); u += 4) middle -= e[u]; \
            for (int u = 4; u < (k); u += 4) middle += e[u]; \
            out[(n) / 2] = middle; \
        } \
    } while (0)

/* The body for blocks of extent k (2 ≤ k ≤ K), n ≤ 8 outputs a side: a row of samples is 8
   floats. */
#define BODY8(ISA, ATTR) \
INLINE ATTR void body8_##ISA(const int n, const int k, const pf_idct_table *t, const JCOEF *coef, \
                             JSAMPARRAY rows, JDIMENSION col, int wide) { \
    v8f e[8]; \
    for (int u = 0; u < k; u++) { \
        v8i sum = madd8_##ISA(pair_at(coef + 8 * u), t->w[u][0]); \
        for (int p = 1; p < (k + 1) / 2; p++) sum += madd8_##ISA(pair_at(coef + 8 * u + 2 * p), t->w[u][p]); \
        e[u] = __builtin_convertvector(sum, v8f) * t->unscale; \
    } \
    e[0] += 128.5f; \
    v8f out[8]; \
    VERTICAL(v8f, n, k, t, e, out); \
    for (int y = 0; y < n; y += 2) { \
        __m128i bytes = pack8_##ISA(out[y], y + 1 < n ? out[y + 1] : out[y]); \
        store_row(rows[y] + col, bytes, 0, n, wide); \
        if (y + 1 < n) store_row(rows[y + 1] + col, bytes, 8, n, wide); \
    } \
}

/* The same for 8 < n ≤ 16 outputs a side (chroma scaled up): a row is 16 floats. */
#define BODY16(ISA, ATTR) \
INLINE ATTR void body16_##ISA(const int n, const int k, const pf_idct_table *t, const JCOEF *coef, \
                              JSAMPARRAY rows, JDIMENSION col, int wide) { \
    v16f e[8]; \
    for (int u = 0; u < k; u++) { \
        v16i sum = madd16_##ISA(pair_at(coef + 8 * u), t->w[u][0]); \
        for (int p = 1; p < (k + 1) / 2; p++) sum += madd16_##ISA(pair_at(coef + 8 * u + 2 * p), t->w[u][p]); \
        e[u] = __builtin_convertvector(sum, v16f) * t->unscale; \
    } \
    e[0] += 128.5f; \
    v16f out[16]; \
    VERTICAL(v16f, n, k, t, e, out); \
    for (int y = 0; y < n; y++) store_row(rows[y] + col, pack16_##ISA(out[y]), 0, n, wide); \
}

BODY8(sse2, )
BODY8(avx2, AVX2)
BODY16(sse2, )
BODY16(avx2, AVX2)

/* One kernel: the block's extent picks a body unrolled for it (extents 5 and 7 take the next
   even one where the block allows: the same pairs of columns). */
#define KERNEL(N, K, W, ISA, ATTR) \
static ATTR void idct_##N##_##ISA(j_decompress_ptr cinfo, jpeg_component_info *compptr, JCOEFPTR coef, \
                                  JSAMPARRAY rows, JDIMENSION col) { \
    const pf_idct_table *t = pf_idct_table_for(cinfo, compptr->component_index); \
    int wide = col + W <= compptr->width_in_blocks * N; \
    int k = block_extent(coef, K); \
    __asm__ volatile("" ::: "memory"); /* read the pairs again: broadcasts from memory */ \
    switch (k) { \
    case 1: flat_block(N, t, coef, rows, col, wide); break; \
    case 2: body##W##_##ISA(N, 2, t, coef, rows, col, wide); break; \
    case 3: body##W##_##ISA(N, 3, t, coef, rows, col, wide); break; \
    case 4: body##W##_##ISA(N, 4 < K ? 4 : K, t, coef, rows, col, wide); break; \
    case 5: case 6: body##W##_##ISA(N, 6 < K ? 6 : K, t, coef, rows, col, wide); break; \
    default: body##W##_##ISA(N, K, t, coef, rows, col, wide); break; \
    } \
}

#define KERNELS(N, K, W) KERNEL(N, K, W, sse2, ) KERNEL(N, K, W, avx2, AVX2)
KERNELS(3, 3, 8)
KERNELS(5, 5, 8)
KERNELS(6, 6, 8)
KERNELS(7, 7, 8)
KERNELS(10, 8, 16)
KERNELS(12, 8, 16)
KERNELS(14, 8, 16)

pf_idct_method pf_idct_kernel(int n, int simd) {
    int avx2 = simd == PF_JPEG_SIMD_AVX2;
    switch (n) {
    case 3: return avx2 ? idct_3_avx2 : idct_3_sse2;
    case 5: return avx2 ? idct_5_avx2 : idct_5_sse2;
    case 6: return avx2 ? idct_6_avx2 : idct_6_sse2;
    case 7: return avx2 ? idct_7_avx2 : idct_7_sse2;
    case 10: return avx2 ? idct_10_avx2 : idct_10_sse2;
    case 12: return avx2 ? idct_12_avx2 : idct_12_sse2;
    case 14: return avx2 ? idct_14_avx2 : idct_14_sse2;
    default: return NULL;
    }
}

#else /* not x86-64: libjpeg's own scaled IDCTs */

void pf_idct_prepare(pf_idct_table *t, int n, const UINT16 *quant) { (void)t; (void)n; (void)quant; }
pf_idct_method pf_idct_kernel(int n, int simd) { (void)n; (void)simd; return NULL; }

#endif
