// The face detector behind CFaces.h: dlib's HOG frontal face detector, searched by dlib's own
// code (its fHOG pyramid and separable filters) on a coarser pyramid than the one it was
// trained with (see `Pyramid`). The filters come from model.c, dlib's model as dlib itself
// searches with it (scripts/face-model writes it from the installed dlib; FaceModelTests checks
// it against that dlib and checks that these searches find what dlib's evaluate_detectors
// finds). dlib's get_frontal_face_detector() would decode its compressed model first: 0.65-1 s
// of CPU per process, 850 million instructions, where filling these filter banks takes
// microseconds. Every dlib object is owned here; no exception crosses into the caller.
#include "CFaces.h"
#include "model.h"

#include <dlib/image_processing/scan_fhog_pyramid.h>

#include <algorithm>
#include <cstdio>
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

}  // namespace

struct pf_faces {
    Scanner scanner;  // the window, cell size and pyramid limits; its feature extractor
    std::vector<Bank> banks;
    std::vector<double> thresholds;
    dlib::test_box_overlap overlap{pf_frontal_iou, pf_frontal_covered};
};

extern "C" pf_faces *pf_faces_new(char *message, size_t size) {
    try {
        pf_faces *faces = new pf_faces;
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
        dlib::impl::create_fhog_pyramid<Pyramid>(image, scanner.get_feature_extractor(), feats, PF_CELL, box, box,
                                                 PF_SMALLEST_LEVEL, PF_SMALLEST_LEVEL,
                                                 scanner.get_max_pyramid_levels());
        std::vector<dlib::rect_detection> candidates, detections;
        std::vector<std::pair<double, dlib::rectangle>> windows;
        for (size_t d = 0; d < faces->banks.size(); ++d) {
            const double threshold = faces->thresholds[d];
            dlib::impl::detect_from_fhog_pyramid<Pyramid>(feats, scanner.get_feature_extractor(), faces->banks[d],
                                                          threshold, box, box, PF_CELL, box, box, windows);
            for (const auto &w : windows) candidates.push_back(dlib::rect_detection{w.first - threshold, 0, w.second});
        }
        for (const auto &candidate : candidates) {
            if (!dlib::impl::overlaps_any_box(faces->overlap, detections, candidate)) detections.push_back(candidate);
        }
        std::stable_sort(detections.begin(), detections.end(),
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
