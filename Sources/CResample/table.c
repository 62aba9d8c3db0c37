#include "CResample.h"

/* pf_table_rgb: each pixel's R, G and B through its own table, four pixels a step (the loads
   of one pixel do not wait for the last one's stores). */
void pf_table_rgb(uint8_t *pixels, int count, int channels, const uint8_t *table) {
    const uint8_t *r = table, *g = table + 256, *b = table + 512;
    uint8_t *p = pixels;
    int i = 0;
    if (channels == 3) {
        for (; i + 4 <= count; i += 4, p += 12) {
            uint8_t r0 = r[p[0]], g0 = g[p[1]], b0 = b[p[2]], r1 = r[p[3]], g1 = g[p[4]], b1 = b[p[5]];
            uint8_t r2 = r[p[6]], g2 = g[p[7]], b2 = b[p[8]], r3 = r[p[9]], g3 = g[p[10]], b3 = b[p[11]];
            p[0] = r0; p[1] = g0; p[2] = b0; p[3] = r1; p[4] = g1; p[5] = b1;
            p[6] = r2; p[7] = g2; p[8] = b2; p[9] = r3; p[10] = g3; p[11] = b3;
        }
    }
    for (; i < count; i++, p += channels) {
        p[0] = r[p[0]];
        p[1] = g[p[1]];
        p[2] = b[p[2]];
    }
}
