// The face detector behind CFaces.h: dlib's HOG frontal face detector, searched by dlib's
// code (its image pyramid, fHOG features and separable filters) on a coarser pyramid than the
// one it was trained with (see `Pyramid`). The filters come from model.c, dlib's model as dlib
// itself searches with it (scripts/face-model writes it from the installed dlib; FaceModelTests
// checks it against that dlib and checks that these searches find what dlib's
// evaluate_detectors finds). dlib's code runs 4 floats an instruction in Debian's amd64 build
// (SSE2) and gathers its pixels one by one; on a CPU with AVX2 this file's copies of the three
// (`pyramid_down_avx2`, `fhog_avx2`, `filter_avx2`) compute the same bytes and floats, to the
// bit, for 0.6 of the CPU (bench/RESULTS.md, "Faces").
// dlib's get_frontal_face_detector() would decode its compressed model first: 0.65-1 s
// of CPU per process, 850 million instructions, where filling these filter banks takes
// microseconds. Every dlib object is owned here; no exception crosses into the caller.
#include "CFaces.h"
#include "model.h"

#include <dlib/image_processing/scan_fhog_pyramid.h>

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

namespace {

// dlib trained the detector on pyramid_down<6> (each level 5/6 of the one before). A level
// of 2/3 finds the same faces on PhotoFinish's test photos for 55 % of the work
// (bench/RESULTS.md, "Faces"): the HOG filters answer to faces over ±20 % of their size.
using Pyramid = dlib::pyramid_down<3>;
using Scanner = dlib::scan_fhog_pyramid<Pyramid>;
using Bank = Scanner::fhog_filterbank;

// The detection window: 10 x 10 cells of 8 px, no padding (what model.h's table is for).
constexpr long window = PF_TAPS * PF_CELL;

void say(char *message, size_t size, const char *what) {
    if (message && size > 0) snprintf(message, size, "%s", what);
}

// One of model.c's detectors as the filter bank dlib's search reads. dlib chooses the
// separable filters when there are fewer than planes x taps / 3 of them (every detector of
// this model: 54-66 against 103), so the full filters are only the shape dlib compares.
Bank bank(const pf_detector &detector) {
    Bank made;
    made.filters.assign(PF_PLANES, dlib::zeros_matrix<float>(PF_TAPS, PF_TAPS));
    made.row_filters.resize(PF_PLANES);
    made.col_filters.resize(PF_PLANES);
    for (int32_t i = 0; i < detector.count; ++i) {
        const pf_separable &filter = detector.filters[i];
        dlib::matrix<float, 0, 1> row(PF_TAPS), column(PF_TAPS);
        for (long k = 0; k < PF_TAPS; ++k) row(k) = filter.row[k], column(k) = filter.column[k];
        made.row_filters[size_t(filter.plane)].push_back(row);
        made.col_filters[size_t(filter.plane)].push_back(column);
    }
    return made;
}


// Each sum below as dlib writes it: a multiply, then an add (never fused), in dlib's order.
#pragma STDC FP_CONTRACT OFF

// dlib's float_spatially_filter_image_separable (dlib/image_transforms/spatial_filtering.h)
// for PF_TAPS-tap filters, with AVX2: every output is the same float dlib's SSE2 build gives
// (the same three partial sums over the taps, added in the same order, the same scalar
// columns at the right edge), 8 columns an instruction instead of 4.
__attribute__((target("avx2"))) dlib::rectangle filter_avx2(const dlib::array2d<float> &in, dlib::array2d<float> &out,
                                                           const dlib::matrix<float, 0, 1> &row_filter,
                                                           const dlib::matrix<float, 0, 1> &col_filter,
                                                           dlib::array2d<float> &scratch, bool add_to) {
    static_assert(PF_TAPS == 10, "the sums below are dlib's for 10 taps");
    if (in.size() == 0) {
        out.clear();
        return dlib::rectangle();
    }
    const long nr = in.nr(), nc = in.nc();
    out.set_size(nr, nc);
    const long first_row = PF_TAPS / 2, first_col = PF_TAPS / 2;
    const long last_row = nr - (PF_TAPS - 1) / 2, last_col = nc - (PF_TAPS - 1) / 2;
    const dlib::rectangle non_border(first_col, first_row, last_col - 1, last_row - 1);
    if (!add_to) dlib::zero_border_pixels(out, non_border);
    scratch.set_size(nr, nc);
    float row[PF_TAPS], col[PF_TAPS];
    for (long k = 0; k < PF_TAPS; ++k) row[k] = row_filter(k), col[k] = col_filter(k);

    for (long r = 0; r < nr; ++r) {
        const float *source = &in[r][0];
        float *target = &scratch[r][0];
        long c = first_col;
        for (; c < last_col - 7; c += 8) {
            const float *p = source + c - first_col;
            __m256 t = _mm256_setzero_ps(), t2 = _mm256_setzero_ps(), t3 = _mm256_setzero_ps();
            for (long n = 0; n < PF_TAPS - 2; n += 3) {
                t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_loadu_ps(p + n), _mm256_set1_ps(row[n])));
                t2 = _mm256_add_ps(t2, _mm256_mul_ps(_mm256_loadu_ps(p + n + 1), _mm256_set1_ps(row[n + 1])));
                t3 = _mm256_add_ps(t3, _mm256_mul_ps(_mm256_loadu_ps(p + n + 2), _mm256_set1_ps(row[n + 2])));
            }
            t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_loadu_ps(p + PF_TAPS - 1), _mm256_set1_ps(row[PF_TAPS - 1])));
            _mm256_storeu_ps(target + c, _mm256_add_ps(t, _mm256_add_ps(t2, t3)));
        }
        for (; c < last_col; ++c) {
            float sum = 0;
            for (long n = 0; n < PF_TAPS; ++n) sum += source[c - first_col + n] * row[n];
            target[c] = sum;
        }
    }
    for (long r = first_row; r < last_row; ++r) {
        float *target = &out[r][0];
        long c = first_col;
        for (; c < last_col - 7; c += 8) {
            __m256 t = _mm256_setzero_ps(), t2 = _mm256_setzero_ps(), t3 = _mm256_setzero_ps();
            for (long m = 0; m < PF_TAPS - 2; m += 3) {
                t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_loadu_ps(&scratch[r - first_row + m][c]), _mm256_set1_ps(col[m])));
                t2 = _mm256_add_ps(t2, _mm256_mul_ps(_mm256_loadu_ps(&scratch[r - first_row + m + 1][c]),
                                                     _mm256_set1_ps(col[m + 1])));
                t3 = _mm256_add_ps(t3, _mm256_mul_ps(_mm256_loadu_ps(&scratch[r - first_row + m + 2][c]),
                                                     _mm256_set1_ps(col[m + 2])));
            }
            t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_loadu_ps(&scratch[r - first_row + PF_TAPS - 1][c]),
                                               _mm256_set1_ps(col[PF_TAPS - 1])));
            t = _mm256_add_ps(t, _mm256_add_ps(t2, t3));
            if (add_to) t = _mm256_add_ps(t, _mm256_loadu_ps(target + c));
            _mm256_storeu_ps(target + c, t);
        }
        for (; c < last_col; ++c) {
            float sum = 0;
            for (long m = 0; m < PF_TAPS; ++m) sum += scratch[r - first_row + m][c] * col[m];
            target[c] = add_to ? target[c] + sum : sum;
        }
    }
    return non_border;
}

// dlib's impl_fhog::impl_extract_fhog_features (dlib/image_transforms/fhog.h) for a grey
// image, its gradient histograms with AVX2: the same floats to the bit as dlib's own code (the
// same operations in the same order; every bin gets its votes in dlib's pixel order), with the
// pixels read 8 at a time where dlib gathers them one by one, and its 18-bin histograms in one
// flat array. `hist` is (cells_nr + 2) x (cells_nc + 2) cells of 18 floats, zeroed.
__attribute__((target("avx2"))) void histograms_avx2(const dlib::array2d<unsigned char> &img, int cell_size,
                                                     int visible_nr, int visible_nc, long hist_nc, float *hist) {
    static const float directions[9][2] = {{1.0000f, 0.0000f},  {0.9397f, 0.3420f},  {0.7660f, 0.6428f},
                                           {0.500f, 0.8660f},   {0.1736f, 0.9848f},  {-0.1736f, 0.9848f},
                                           {-0.5000f, 0.8660f}, {-0.7660f, 0.6428f}, {-0.9397f, 0.3420f}};
    const __m256 lanes = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f), minus = _mm256_set1_ps(-1.0f);
    const __m256 cell = _mm256_set1_ps(float(cell_size));
    for (int y = 1; y < visible_nr; y++) {
        const float yp = ((float)y + 0.5) / (float)cell_size - 0.5;
        const int iyp = (int)std::floor(yp);
        const float vy0 = yp - iyp;
        const float vy1 = 1.0 - vy0;
        const __m256 wy0 = _mm256_set1_ps(vy0), wy1 = _mm256_set1_ps(vy1);
        const unsigned char *above = &img[y - 1][0], *row = &img[y][0], *below = &img[y + 1][0];
        float *top = hist + (long(iyp) + 1) * hist_nc * 18, *bottom = top + hist_nc * 18;
        int x;
        for (x = 1; x < visible_nc - 7; x += 8) {
            const __m256 xx = _mm256_add_ps(_mm256_set1_ps(float(x)), lanes);
            const __m256i left = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + x - 1)));
            const __m256i right = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + x + 1)));
            const __m256i up = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(above + x)));
            const __m256i down = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(below + x)));
            const __m256 gx = _mm256_cvtepi32_ps(_mm256_sub_epi32(right, left));
            const __m256 gy = _mm256_cvtepi32_ps(_mm256_sub_epi32(down, up));
            __m256 v = _mm256_add_ps(_mm256_mul_ps(gx, gx), _mm256_mul_ps(gy, gy));
            const __m256 xp = _mm256_add_ps(_mm256_div_ps(_mm256_add_ps(xx, half), cell), half);
            const __m256i ixp = _mm256_cvttps_epi32(xp);
            __m256 vx0 = _mm256_sub_ps(xp, _mm256_cvtepi32_ps(ixp));
            __m256 vx1 = _mm256_sub_ps(one, vx0);
            v = _mm256_sqrt_ps(v);
            __m256 best_dot = _mm256_setzero_ps(), best_o = _mm256_setzero_ps();
            for (int o = 0; o < 9; o++) {
                __m256 dot = _mm256_add_ps(_mm256_mul_ps(gx, _mm256_set1_ps(directions[o][0])),
                                           _mm256_mul_ps(gy, _mm256_set1_ps(directions[o][1])));
                __m256 cmp = _mm256_cmp_ps(dot, best_dot, _CMP_GT_OQ);
                best_dot = _mm256_blendv_ps(best_dot, dot, cmp);
                dot = _mm256_mul_ps(dot, minus);
                best_o = _mm256_blendv_ps(best_o, _mm256_set1_ps(float(o)), cmp);
                cmp = _mm256_cmp_ps(dot, best_dot, _CMP_GT_OQ);
                best_dot = _mm256_blendv_ps(best_dot, dot, cmp);
                best_o = _mm256_blendv_ps(best_o, _mm256_set1_ps(float(o + 9)), cmp);
            }
            vx1 = _mm256_mul_ps(vx1, v);
            vx0 = _mm256_mul_ps(vx0, v);
            alignas(32) int32_t o8[8], ix8[8];
            alignas(32) float v11[8], v01[8], v10[8], v00[8];
            _mm256_store_si256((__m256i *)o8, _mm256_cvttps_epi32(best_o));
            _mm256_store_si256((__m256i *)ix8, ixp);
            _mm256_store_ps(v11, _mm256_mul_ps(wy1, vx1));
            _mm256_store_ps(v01, _mm256_mul_ps(wy0, vx1));
            _mm256_store_ps(v10, _mm256_mul_ps(wy1, vx0));
            _mm256_store_ps(v00, _mm256_mul_ps(wy0, vx0));
            for (int i = 0; i < 8; i++) {
                const long at = long(ix8[i]) * 18 + o8[i];
                top[at] += v11[i];
                bottom[at] += v01[i];
                top[at + 18] += v10[i];
                bottom[at + 18] += v00[i];
            }
        }
        // The right columns, one by one (dlib's scalar tail).
        for (; x < visible_nc; x++) {
            const float gx = (int)row[x + 1] - (int)row[x - 1], gy = (int)below[x] - (int)above[x];
            float v = gx * gx + gy * gy;
            float best_dot = 0;
            int best_o = 0;
            for (int o = 0; o < 9; o++) {
                const float dot = directions[o][0] * gx + directions[o][1] * gy;
                if (dot > best_dot) {
                    best_dot = dot;
                    best_o = o;
                } else if (-dot > best_dot) {
                    best_dot = -dot;
                    best_o = o + 9;
                }
            }
            v = std::sqrt(v);
            const float xp = ((double)x + 0.5) / (double)cell_size - 0.5;
            const int ixp = (int)std::floor(xp);
            const float vx0 = xp - ixp;
            const float vx1 = 1.0 - vx0;
            const long at = (long(ixp) + 1) * 18 + best_o;
            top[at] += vy1 * vx1 * v;
            bottom[at] += vy0 * vx1 * v;
            top[at + 18] += vy1 * vx0 * v;
            bottom[at + 18] += vy0 * vx0 * v;
        }
    }
}

// The rest of dlib's impl_extract_fhog_features as dlib writes it (each cell's energy, then
// its 31 features from its 2 x 2 blocks), on `histograms_avx2`'s histograms.
void fhog_avx2(const dlib::array2d<unsigned char> &img, dlib::array<dlib::array2d<float>> &hog, int cell_size,
               int filter_rows_padding, int filter_cols_padding) {
    const int cells_nr = (int)((float)img.nr() / (float)cell_size + 0.5);
    const int cells_nc = (int)((float)img.nc() / (float)cell_size + 0.5);
    if (cells_nr == 0 || cells_nc == 0) {
        hog.clear();
        return;
    }
    const int hog_nr = std::max(cells_nr - 2, 0), hog_nc = std::max(cells_nc - 2, 0);
    if (hog_nr == 0 || hog_nc == 0) {
        hog.clear();
        return;
    }
    const long hist_nc = cells_nc + 2;
    std::vector<float> hist(size_t(cells_nr + 2) * size_t(hist_nc) * 18, 0.0f);
    std::vector<float> norm(size_t(cells_nr) * size_t(cells_nc), 0.0f);
    const int padding_rows_offset = (filter_rows_padding - 1) / 2;
    const int padding_cols_offset = (filter_cols_padding - 1) / 2;
    dlib::impl_fhog::init_hog(hog, hog_nr, hog_nc, filter_rows_padding, filter_cols_padding);
    const int visible_nr = std::min((long)cells_nr * cell_size, img.nr()) - 1;
    const int visible_nc = std::min((long)cells_nc * cell_size, img.nc()) - 1;
    histograms_avx2(img, cell_size, visible_nr, visible_nc, hist_nc, hist.data());
    auto h = [&](long r, long c) { return &hist[(size_t(r) * size_t(hist_nc) + size_t(c)) * 18]; };
    auto n_at = [&](long r, long c) -> float & { return norm[size_t(r) * size_t(cells_nc) + size_t(c)]; };
    for (int r = 0; r < cells_nr; ++r) {
        for (int c = 0; c < cells_nc; ++c) {
            const float *b = h(r + 1, c + 1);
            float &e = n_at(r, c);
            for (int o = 0; o < 9; o++) e += (b[o] + b[o + 9]) * (b[o] + b[o + 9]);
        }
    }
    const float eps = 0.0001;
    for (int y = 0; y < hog_nr; y++) {
        const int yy = y + padding_rows_offset;
        for (int x = 0; x < hog_nc; x++) {
            const dlib::simd4f z1(n_at(y + 1, x + 1), n_at(y, x + 1), n_at(y + 1, x), n_at(y, x));
            const dlib::simd4f z2(n_at(y + 1, x + 2), n_at(y, x + 2), n_at(y + 1, x + 1), n_at(y, x + 1));
            const dlib::simd4f z3(n_at(y + 2, x + 1), n_at(y + 1, x + 1), n_at(y + 2, x), n_at(y + 1, x));
            const dlib::simd4f z4(n_at(y + 2, x + 2), n_at(y + 1, x + 2), n_at(y + 2, x + 1), n_at(y + 1, x + 1));
            const dlib::simd4f nn = 0.2 * dlib::sqrt(z1 + z2 + z3 + z4 + eps);
            const dlib::simd4f n = 0.1 / nn;
            dlib::simd4f t = 0;
            const int xx = x + padding_cols_offset;
            const float *b = h(y + 2, x + 2);
            for (int o = 0; o < 18; o += 3) {
                dlib::simd4f h0 = dlib::min(dlib::simd4f(b[o]), nn) * n;
                dlib::simd4f h1 = dlib::min(dlib::simd4f(b[o + 1]), nn) * n;
                dlib::simd4f h2 = dlib::min(dlib::simd4f(b[o + 2]), nn) * n;
                hog[o][yy][xx] = dlib::sum(h0);
                hog[o + 1][yy][xx] = dlib::sum(h1);
                hog[o + 2][yy][xx] = dlib::sum(h2);
                t += h0 + h1 + h2;
            }
            t *= 2 * 0.2357;
            for (int o = 0; o < 9; o += 3) {
                dlib::simd4f h0 = dlib::min(dlib::simd4f(b[o] + b[o + 9]), nn) * n;
                dlib::simd4f h1 = dlib::min(dlib::simd4f(b[o + 1] + b[o + 9 + 1]), nn) * n;
                dlib::simd4f h2 = dlib::min(dlib::simd4f(b[o + 2] + b[o + 9 + 2]), nn) * n;
                hog[o + 18][yy][xx] = dlib::sum(h0);
                hog[o + 18 + 1][yy][xx] = dlib::sum(h1);
                hog[o + 18 + 2][yy][xx] = dlib::sum(h2);
            }
            float temp[4];
            t.store(temp);
            hog[27][yy][xx] = temp[0];
            hog[28][yy][xx] = temp[1];
            hog[29][yy][xx] = temp[2];
            hog[30][yy][xx] = temp[3];
        }
    }
}

// dlib's pyramid_down<3> (pyramid_down_3_2, dlib/image_transforms/image_pyramid.h) of a grey
// image: each 3 x 3 block of the [2 12 2] x [2 12 2]-blurred image interpolated into 2 x 2
// pixels. All in integers, so the same bytes as dlib's, here a row at a time (dlib filters
// each block's 5 x 5 neighbourhood on its own, 2.7 times over each pixel).
__attribute__((target("avx2"))) void blur_row(const unsigned char *above, const unsigned char *row,
                                              const unsigned char *below, long nc, int32_t *blurred) {
    // [2 12 2] across, then down, for the columns 1 ... nc - 2.
    for (long x = 1; x < nc - 1; ++x) {
        const int32_t a = 2 * above[x - 1] + 12 * above[x] + 2 * above[x + 1];
        const int32_t m = 2 * row[x - 1] + 12 * row[x] + 2 * row[x + 1];
        const int32_t b = 2 * below[x - 1] + 12 * below[x] + 2 * below[x + 1];
        blurred[x] = 2 * a + 12 * m + 2 * b;
    }
}

__attribute__((target("avx2"))) void pyramid_down_avx2(const dlib::array2d<unsigned char> &in,
                                                       dlib::array2d<unsigned char> &out) {
    const long nr = in.nr(), nc = in.nc();
    if (nr <= 8 || nc <= 8) {
        out.clear();
        return;
    }
    const long part_nr = (2 * (nr - 2)) / 3, part_nc = (2 * (nc - 2)) / 3;
    out.set_size(part_nr, part_nc);
    std::vector<int32_t> near(size_t(nc), 0), middle(size_t(nc), 0), mix(size_t(nc), 0);
    for (long r = 0; r < part_nr; ++r) {
        // Output row r of block row r / 2: dlib's block rows rr (r even) or rr + 2 (r odd),
        // each with rr + 1, rr = 1 + 3 (r / 2).
        const long rr = 1 + 3 * (r / 2), a = rr + 2 * (r % 2), b = rr + 1;
        blur_row(&in[a - 1][0], &in[a][0], &in[a + 1][0], nc, near.data());
        blur_row(&in[b - 1][0], &in[b][0], &in[b + 1][0], nc, middle.data());
        for (long x = 1; x < nc - 1; ++x) mix[size_t(x)] = 3 * near[size_t(x)] + middle[size_t(x)];
        unsigned char *target = &out[r][0];
        for (long c = 0, cc = 1; c < part_nc; c += 2, cc += 3) {
            target[c] = (unsigned char)((3 * mix[size_t(cc)] + mix[size_t(cc + 1)]) / (16 * 256));
            if (c + 1 < part_nc) target[c + 1] = (unsigned char)((3 * mix[size_t(cc + 2)] + mix[size_t(cc + 1)]) / (16 * 256));
        }
    }
}

// dlib's impl::create_fhog_pyramid for a grey image: the levels (each 2/3 of the one before,
// while both sides stay at least `smallest` pixels and there are at most `most`), and each
// level's fHOG. With AVX2: pyramid_down_avx2 and fhog_avx2; else dlib's own.
void fhog_pyramid(const dlib::array2d<unsigned char> &img, bool avx2, dlib::array<dlib::array<dlib::array2d<float>>> &feats,
                  long box, unsigned long smallest, unsigned long most) {
    if (!avx2) {
        dlib::impl::create_fhog_pyramid<Pyramid>(img, dlib::default_fhog_feature_extractor(), feats, PF_CELL, box, box,
                                                 smallest, smallest, most);
        return;
    }
    unsigned long levels = 0;
    dlib::rectangle rect = dlib::get_rect(img);
    const Pyramid pyr;
    do {
        rect = pyr.rect_down(rect);
        ++levels;
    } while (rect.width() >= smallest && rect.height() >= smallest && levels < most);
    if (feats.max_size() < levels) feats.set_max_size(levels);
    feats.set_size(levels);
    fhog_avx2(img, feats[0], PF_CELL, box, box);
    dlib::array2d<unsigned char> level, next;
    for (unsigned long i = 1; i < feats.size(); ++i) {
        pyramid_down_avx2(i == 1 ? img : level, next);
        fhog_avx2(next, feats[i], PF_CELL, box, box);
        dlib::swap(level, next);
    }
}

// The feature extractor create_fhog_pyramid calls on each level: fhog_avx2, or dlib's own.
struct Features {
    bool avx2;
    unsigned long get_num_planes() const { return PF_PLANES; }
    void operator()(const dlib::array2d<unsigned char> &img, dlib::array<dlib::array2d<float>> &hog, int cell_size,
                    int rows_padding, int cols_padding) const {
        if (avx2) fhog_avx2(img, hog, cell_size, rows_padding, cols_padding);
        else dlib::extract_fhog_features(img, hog, cell_size, rows_padding, cols_padding);
    }
};

// dlib's impl::apply_filters_to_fhog, separable branch (the one this model's banks take): the
// saliency of every window of one pyramid level, the sum of the bank's filters.
dlib::rectangle saliency(const Bank &bank, const dlib::array<dlib::array2d<float>> &planes, dlib::array2d<float> &image,
                         dlib::array2d<float> &scratch, bool avx2) {
    dlib::rectangle area;
    image.clear();
    for (size_t i = 0; i < bank.row_filters.size(); ++i) {
        for (size_t j = 0; j < bank.row_filters[i].size(); ++j) {
            const bool add = image.size() != 0;
            area = avx2 ? filter_avx2(planes[i], image, bank.row_filters[i][j], bank.col_filters[i][j], scratch, add)
                        : dlib::float_spatially_filter_image_separable(planes[i], image, bank.row_filters[i][j],
                                                                        bank.col_filters[i][j], scratch, add);
        }
    }
    if (image.size() == 0) {
        image.set_size(planes[0].nr(), planes[0].nc());
        dlib::assign_all_pixels(image, 0);
    }
    return area;
}

bool cpu_has_avx2() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

}  // namespace

struct pf_faces {
    Scanner scanner;  // the window, cell size and pyramid limits; its feature extractor
    std::vector<Bank> banks;
    std::vector<double> thresholds;
    dlib::test_box_overlap overlap{pf_frontal_iou, pf_frontal_covered};
    bool avx2 = false;  // this file's AVX2 pyramid, fHOG and filtering, else dlib's own (SSE2)
};

extern "C" int32_t pf_faces_cpu_has_avx2(void) { return cpu_has_avx2() ? 1 : 0; }

extern "C" pf_faces *pf_faces_new(char *message, size_t size) {
    const char *simd = getenv("PHOTOFINISH_SIMD");
    return pf_faces_new_simd(cpu_has_avx2() && !(simd && strcmp(simd, "sse2") == 0), message, size);
}

extern "C" int32_t pf_faces_avx2(const pf_faces *faces) { return faces && faces->avx2 ? 1 : 0; }

extern "C" pf_faces *pf_faces_new_simd(int32_t avx2, char *message, size_t size) {
    if (avx2 && !cpu_has_avx2()) {
        say(message, size, "this CPU has no AVX2");
        return nullptr;
    }
    try {
        pf_faces *faces = new pf_faces;
        faces->avx2 = avx2 != 0;
        try {
            faces->scanner.set_detection_window_size(window, window);
            faces->scanner.set_padding(0);
            faces->scanner.set_cell_size(PF_CELL);
            faces->scanner.set_min_pyramid_layer_size(PF_SMALLEST_LEVEL, PF_SMALLEST_LEVEL);
            for (const pf_detector &detector : pf_frontal_detectors) {
                faces->banks.push_back(bank(detector));
                faces->thresholds.push_back(detector.threshold);
            }
        } catch (...) {
            delete faces;
            throw;
        }
        return faces;
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error making the face detector");
    }
    return nullptr;
}

extern "C" void pf_faces_free(pf_faces *faces) { delete faces; }

extern "C" int32_t pf_faces_smallest(void) {
    // An 80 px window; dlib's boxes are about 7/8 of it on the finest level.
    return 70;
}

extern "C" size_t pf_faces_working_bytes(int32_t width, int32_t height) {
    if (width <= 0 || height <= 0) return 0;
    // The copy searched and two pyramid levels at a time (bytes), and per level kept: 31
    // feature planes, a cell histogram of 18 and its energy while they are made, the
    // saliency image and the separable filter's scratch (floats a cell, each plane padded by
    // the window on both axes).
    Pyramid pyramid;
    dlib::rectangle level(0, 0, width - 1, height - 1);
    size_t bytes = 3 * size_t(width) * size_t(height), cells = 0;
    for (unsigned long l = 0; l < 1000; ++l) {
        cells += size_t(level.width() / PF_CELL + PF_TAPS) * size_t(level.height() / PF_CELL + PF_TAPS);
        level = pyramid.rect_down(level);
        if (level.width() < PF_SMALLEST_LEVEL || level.height() < PF_SMALLEST_LEVEL) break;
    }
    return bytes + cells * (PF_PLANES + 18 + 1 + 2) * sizeof(float);
}

extern "C" int32_t pf_faces_find(const pf_faces *faces, const uint8_t *grey, int32_t width, int32_t height,
                                 size_t stride, pf_face *found, int32_t capacity, char *message, size_t size) {
    if (!faces || !grey || width <= 0 || height <= 0 || stride < size_t(width) || capacity < 0) {
        say(message, size, "pf_faces_find: invalid arguments");
        return -1;
    }
    try {
        dlib::array2d<unsigned char> image(height, width);
        for (int32_t y = 0; y < height; ++y) std::memcpy(&image[y][0], grey + size_t(y) * stride, size_t(width));
        // dlib's evaluate_detectors, for the five filter banks of one detector: one fHOG
        // pyramid, each bank's windows over its threshold, then non-maximum suppression in
        // the order found (dlib sorts only across detectors, not within one).
        const Scanner &scanner = faces->scanner;
        const long box = long(scanner.get_fhog_window_width());
        dlib::array<dlib::array<dlib::array2d<float>>> feats;
        fhog_pyramid(image, faces->avx2, feats, box, PF_SMALLEST_LEVEL, scanner.get_max_pyramid_levels());
        // Each bank's windows over its threshold, strongest first (dlib's
        // impl::detect_from_fhog_pyramid, with this file's filtering).
        const auto &fe = scanner.get_feature_extractor();
        const Pyramid pyramid;
        std::vector<dlib::rect_detection> candidates, detections;
        std::vector<std::pair<double, dlib::rectangle>> windows;
        dlib::array2d<float> image_saliency, scratch;
        for (size_t d = 0; d < faces->banks.size(); ++d) {
            const double threshold = faces->thresholds[d];
            windows.clear();
            for (unsigned long l = 0; l < feats.size(); ++l) {
                const dlib::rectangle area = saliency(faces->banks[d], feats[l], image_saliency, scratch, faces->avx2);
                for (long r = area.top(); r <= area.bottom(); ++r) {
                    for (long c = area.left(); c <= area.right(); ++c) {
                        if (image_saliency[r][c] < threshold) continue;
                        dlib::rectangle rect =
                            fe.feats_to_image(dlib::centered_rect(dlib::point(c, r), box, box), PF_CELL, box, box);
                        windows.push_back(std::make_pair(double(image_saliency[r][c]), pyramid.rect_up(rect, l)));
                    }
                }
            }
            std::sort(windows.rbegin(), windows.rend(), dlib::impl::compare_pair_rect);
            for (const auto &w : windows) candidates.push_back(dlib::rect_detection{w.first - threshold, 0, w.second});
        }
        for (const auto &candidate : candidates) {
            if (!dlib::impl::overlaps_any_box(faces->overlap, detections, candidate)) detections.push_back(candidate);
        }
        std::sort(detections.begin(), detections.end(),
                         [](const dlib::rect_detection &a, const dlib::rect_detection &b) {
                             return a.detection_confidence > b.detection_confidence;
                         });
        int32_t count = 0;
        for (const auto &d : detections) {
            const long x0 = std::max(0L, d.rect.left()), y0 = std::max(0L, d.rect.top());
            const long x1 = std::min(long(width) - 1, d.rect.right()), y1 = std::min(long(height) - 1, d.rect.bottom());
            if (x1 < x0 || y1 < y0) continue;
            if (count < capacity) {
                found[count] = pf_face{int32_t(x0), int32_t(y0), int32_t(x1 - x0 + 1), int32_t(y1 - y0 + 1),
                                       d.detection_confidence};
            }
            ++count;
        }
        return count;
    } catch (const std::bad_alloc &) {
        say(message, size, "out of memory in dlib's face detector");
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error in dlib's face detector");
    }
    return -1;
}

extern "C" int64_t pf_faces_features(int32_t avx2, const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                                     int32_t level, float *planes, size_t capacity, int32_t *rows, int32_t *columns, char *message,
                                     size_t size) {
    if (!grey || width <= 0 || height <= 0 || stride < size_t(width) || level < 0 || !rows || !columns) {
        say(message, size, "pf_faces_features: invalid arguments");
        return -1;
    }
    if (avx2 && !cpu_has_avx2()) {
        say(message, size, "this CPU has no AVX2");
        return -1;
    }
    try {
        dlib::array2d<unsigned char> image(height, width);
        for (int32_t y = 0; y < height; ++y) std::memcpy(&image[y][0], grey + size_t(y) * stride, size_t(width));
        dlib::array2d<unsigned char> down;
        for (int32_t l = 0; l < level; ++l) {
            if (avx2) pyramid_down_avx2(image, down);
            else Pyramid()(image, down);
            dlib::swap(image, down);
        }
        dlib::array<dlib::array2d<float>> hog;
        if (image.size() > 0) Features{avx2 != 0}(image, hog, PF_CELL, window / PF_CELL, window / PF_CELL);
        *rows = hog.size() ? int32_t(hog[0].nr()) : 0;
        *columns = hog.size() ? int32_t(hog[0].nc()) : 0;
        const size_t plane = size_t(*rows) * size_t(*columns), count = hog.size() * plane;
        if (planes && capacity >= count) {
            for (size_t i = 0; i < hog.size(); ++i)
                for (long r = 0; r < hog[i].nr(); ++r)
                    std::memcpy(planes + i * plane + size_t(r) * size_t(*columns), &hog[i][r][0], size_t(*columns) * sizeof(float));
        }
        return int64_t(count);
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error in dlib's fHOG");
    }
    return -1;
}
