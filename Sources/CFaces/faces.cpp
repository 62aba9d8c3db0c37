// The face detector behind CFaces.h: dlib's HOG frontal face detector, searched on a
// coarser pyramid than the one it was trained with (see `Pyramid`), evaluated with
// dlib::evaluate_detectors, which reads the detector without changing it (object_detector's
// own operator() keeps the image's features in the detector), so one detector serves every
// thread. Every dlib object is owned here; no exception crosses into the caller.
#include "CFaces.h"

#include <dlib/image_processing/frontal_face_detector.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

namespace {

// dlib trained the detector on pyramid_down<6> (each level 5/6 of the one before). A level
// of 2/3 finds the same faces on PhotoFinish's test photos for 55 % of the work
// (bench/subject/RESULTS.md): the HOG filters answer to faces over ±20 % of their size.
using Pyramid = dlib::pyramid_down<3>;
using Detector = dlib::object_detector<dlib::scan_fhog_pyramid<Pyramid>>;

void say(char *message, size_t size, const char *what) {
    if (message && size > 0) snprintf(message, size, "%s", what);
}

// dlib's trained filters on the pyramid PhotoFinish searches.
Detector build() {
    dlib::frontal_face_detector trained = dlib::get_frontal_face_detector();
    const auto &old = trained.get_scanner();
    dlib::scan_fhog_pyramid<Pyramid> scanner;
    scanner.set_detection_window_size(old.get_detection_window_width(), old.get_detection_window_height());
    scanner.set_padding(old.get_padding());
    scanner.set_cell_size(old.get_cell_size());
    scanner.set_nuclear_norm_regularization_strength(old.get_nuclear_norm_regularization_strength());
    scanner.set_min_pyramid_layer_size(old.get_min_pyramid_layer_width(), old.get_min_pyramid_layer_height());
    scanner.set_max_pyramid_levels(old.get_max_pyramid_levels());
    std::vector<dlib::matrix<double, 0, 1>> weights;
    for (unsigned long i = 0; i < trained.num_detectors(); ++i) weights.push_back(trained.get_w(i));
    return Detector(scanner, trained.get_overlap_tester(), weights);
}

}  // namespace

struct pf_faces {
    std::vector<Detector> detectors;  // one, in the vector evaluate_detectors reads
};

extern "C" pf_faces *pf_faces_new(char *message, size_t size) {
    try {
        pf_faces *faces = new pf_faces;
        try {
            faces->detectors.push_back(build());
        } catch (...) {
            delete faces;
            throw;
        }
        return faces;
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error building dlib's face detector");
    }
    return nullptr;
}

extern "C" void pf_faces_free(pf_faces *faces) { delete faces; }

extern "C" int32_t pf_faces_smallest(void) {
    // An 80 px window; dlib's boxes are about 7/8 of it on the finest level.
    return 70;
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
        std::vector<dlib::rect_detection> detections;
        dlib::evaluate_detectors(faces->detectors, image, detections, 0.0);
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
