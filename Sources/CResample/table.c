#include "CResample.h"

/* Each pixel's R, G and B of `from` through its own table into `to` (alpha copied), four pixels a
   step (the loads of one pixel do not wait for the last one's stores). `from` may be `to`. */
static void table_rgb_scalar(const uint8_t *from, uint8_t *to, int count, int channels, const uint8_t *table) {
    const uint8_t *r = table, *g = table + 256, *b = table + 512;
    const uint8_t *p = from;
    uint8_t *q = to;
    int i = 0;
    if (channels == 3) {
        for (; i + 4 <= count; i += 4, p += 12, q += 12) {
            uint8_t r0 = r[p[0]], g0 = g[p[1]], b0 = b[p[2]], r1 = r[p[3]], g1 = g[p[4]], b1 = b[p[5]];
            uint8_t r2 = r[p[6]], g2 = g[p[7]], b2 = b[p[8]], r3 = r[p[9]], g3 = g[p[10]], b3 = b[p[11]];
            q[0] = r0; q[1] = g0; q[2] = b0; q[3] = r1; q[4] = g1; q[5] = b1;
            q[6] = r2; q[7] = g2; q[8] = b2; q[9] = r3; q[10] = g3; q[11] = b3;
        }
    }
    for (; i < count; i++, p += channels, q += channels) {
        uint8_t r0 = r[p[0]], g0 = g[p[1]], b0 = b[p[2]];
        if (channels == 4) q[3] = p[3];
        q[0] = r0; q[1] = g0; q[2] = b0;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

int pf_table_cpu_has_vbmi(void) {
    /* compiler-rt's cpu model also checks that the kernel saves the ZMM registers (XGETBV). */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
}

/* One channel's 256 entries as four 64-byte registers: a byte's lookup is two 128-entry
   permutes (vpermi2b: its low 7 bits) and a blend on its top bit. */
#define PF_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

PF_VBMI static inline __m512i lookup_vbmi(__m512i x, const __m512i t[4]) {
    __m512i low = _mm512_permutex2var_epi8(t[0], x, t[1]), high = _mm512_permutex2var_epi8(t[2], x, t[3]);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), low, high);
}

/* RGB pixels 64 at a time (three registers of 64 bytes): every byte looked up in all three
   tables, then each byte's own channel kept (a register starts on R, G or B in turn: 64 is 1
   modulo 3). The pixels left over go through the scalar loop. Same bytes as it. */
PF_VBMI static void table_rgb_vbmi(const uint8_t *from, uint8_t *to, int count, const uint8_t *table) {
    __m512i t[3][4];
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 4; k++) t[c][k] = _mm512_loadu_si512((const void *)(table + 256 * c + 64 * k));
    /* keep[s][c]: the bytes of channel c in a register whose first byte is of channel s. */
    __mmask64 keep[3][3];
    for (int s = 0; s < 3; s++)
        for (int c = 0; c < 3; c++) {
            __mmask64 m = 0;
            for (int i = 0; i < 64; i++)
                if ((s + i) % 3 == c) m |= (__mmask64)1 << i;
            keep[s][c] = m;
        }
    int i = 0;
    for (; i + 64 <= count; i += 64) {
        const uint8_t *p = from + 3 * i;
        uint8_t *q = to + 3 * i;
        for (int v = 0; v < 3; v++) {
            __m512i x = _mm512_loadu_si512((const void *)(p + 64 * v));
            int s = v;  /* register v of a 192-byte step starts on channel v (64·v mod 3) */
            __m512i out = lookup_vbmi(x, t[0]);
            out = _mm512_mask_blend_epi8(keep[s][1], out, lookup_vbmi(x, t[1]));
            out = _mm512_mask_blend_epi8(keep[s][2], out, lookup_vbmi(x, t[2]));
            _mm512_storeu_si512((void *)(q + 64 * v), out);
        }
    }
    table_rgb_scalar(from + 3 * i, to + 3 * i, count - i, 3, table);
}
#else
int pf_table_cpu_has_vbmi(void) { return 0; }
#endif

void pf_table_rgb_copy(int vbmi, const uint8_t *from, uint8_t *to, int count, int channels, const uint8_t *table) {
#if defined(__x86_64__)
    if (vbmi && channels == 3) return table_rgb_vbmi(from, to, count, table);
#else
    (void)vbmi;
#endif
    table_rgb_scalar(from, to, count, channels, table);
}
