// dlib's face detector as dlib runs it, for the tests and the benchmarks (see
// CFacesReference.h): the oracle CFaces' own search is checked against, and the writer of the
// model table CFaces compiles in. The detector is made once, on first use, and only read after.
#include "CFacesReference.h"

#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/revision.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <vector>

namespace {

// dlib trained its detector on pyramid_down<6> (each level 5/6 of the one before); CFaces
// searches the same filters on pyramid_down<3> (2/3), as the reference does.
using Pyramid = dlib::pyramid_down<3>;
using Detector = dlib::object_detector<dlib::scan_fhog_pyramid<Pyramid>>;

void say(char *message, size_t size, const char *what) {
    if (message && size > 0) snprintf(message, size, "%s", what);
}

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

// The one detector, in the vector evaluate_detectors reads (made on first use).
const std::vector<Detector> &detectors() {
    static std::once_flag once;
    static std::vector<Detector> made;
    std::call_once(once, [] { made.push_back(build()); });
    return made;
}

// A float as C reads it back exactly.
void hex(FILE *out, float value) { fprintf(out, "%af", double(value)); }

}  // namespace

extern "C" int32_t pf_reference_find(const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                                     double adjust, pf_reference_face *found, int32_t capacity, char *message,
                                     size_t size) {
    if (!grey || width <= 0 || height <= 0 || stride < size_t(width) || capacity < 0) {
        say(message, size, "pf_reference_find: invalid arguments");
        return -1;
    }
    try {
        dlib::array2d<unsigned char> image(height, width);
        for (int32_t y = 0; y < height; ++y) std::memcpy(&image[y][0], grey + size_t(y) * stride, size_t(width));
        std::vector<dlib::rect_detection> detections;
        dlib::evaluate_detectors(detectors(), image, detections, adjust);
        int32_t count = 0;
        for (const auto &d : detections) {
            if (count < capacity) {
                found[count] = pf_reference_face{int32_t(d.rect.left()), int32_t(d.rect.top()), int32_t(d.rect.width()),
                                                 int32_t(d.rect.height()), d.detection_confidence};
            }
            ++count;
        }
        return count;
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error in dlib's face detector");
    }
    return -1;
}

extern "C" int32_t pf_reference_write_model(FILE *out, char *message, size_t size) {
    try {
        const Detector &detector = detectors()[0];
        const auto &scanner = detector.get_scanner();
        const long dims = long(scanner.get_num_dimensions());
        if (scanner.get_fhog_window_width() != 10 || scanner.get_fhog_window_height() != 10 ||
            scanner.get_cell_size() != 8 || scanner.get_padding() != 0 ||
            scanner.get_min_pyramid_layer_width() != 64 || scanner.get_min_pyramid_layer_height() != 64 ||
            detector.num_detectors() != 5) {
            say(message, size, "dlib's frontal face detector is not the five detectors of an 80 x 80 window of 8 px cells CFaces is written for");
            return -1;
        }
        fprintf(out,
                "/* dlib's frontal face detector (dlib::get_frontal_face_detector(), dlib %d.%d), as the\n"
                "   separable filters dlib itself searches with (scan_fhog_pyramid::build_fhog_filterbank):\n"
                "   for each of its five detectors (front, turned left, turned right, tilted either way),\n"
                "   its threshold and, plane by plane of the 31 HOG planes, each filter's row and column\n"
                "   taps in the order dlib adds them. Written by scripts/face-model; FaceModelTests checks\n"
                "   that it is what the installed dlib gives. Do not edit.\n"
                "\n"
                "   The model is dlib's: Copyright (C) Davis E. King (davis@dlib.net), under the Boost\n"
                "   Software License, Version 1.0:\n"
                "\n"
                "   Permission is hereby granted, free of charge, to any person or organization obtaining a\n"
                "   copy of the software and accompanying documentation covered by this license (the\n"
                "   \"Software\") to use, reproduce, display, distribute, execute, and transmit the Software,\n"
                "   and to prepare derivative works of the Software, and to permit third-parties to whom the\n"
                "   Software is furnished to do so, all subject to the following:\n"
                "\n"
                "   The copyright notices in the Software and this entire statement, including the above\n"
                "   license grant, this restriction and the following disclaimer, must be included in all\n"
                "   copies of the Software, in whole or in part, and all derivative works of the Software,\n"
                "   unless such copies or derivative works are solely in the form of machine-executable\n"
                "   object code generated by a source language processor.\n"
                "\n"
                "   THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,\n"
                "   INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR\n"
                "   PURPOSE, TITLE AND NON-INFRINGEMENT. IN NO EVENT SHALL THE COPYRIGHT HOLDERS OR ANYONE\n"
                "   DISTRIBUTING THE SOFTWARE BE LIABLE FOR ANY DAMAGES OR OTHER LIABILITY, WHETHER IN\n"
                "   CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR\n"
                "   THE USE OR OTHER DEALINGS IN THE SOFTWARE. */\n"
                "#include \"model.h\"\n",
                DLIB_MAJOR_VERSION, DLIB_MINOR_VERSION);
        for (unsigned long d = 0; d < detector.num_detectors(); ++d) {
            const auto &bank = detector.get_processed_w(d).get_detect_argument();
            fprintf(out, "\nstatic const pf_separable filters%lu[%lu] = {\n", d, bank.num_separable_filters());
            for (unsigned long plane = 0; plane < bank.row_filters.size(); ++plane) {
                for (unsigned long j = 0; j < bank.row_filters[plane].size(); ++j) {
                    const auto &row = bank.row_filters[plane][j];
                    const auto &column = bank.col_filters[plane][j];
                    if (row.size() != 10 || column.size() != 10) {
                        say(message, size, "a separable filter is not 10 taps long");
                        return -1;
                    }
                    fprintf(out, "    {%lu,\n     {", plane);
                    for (long k = 0; k < 10; ++k) { hex(out, row(k)); fprintf(out, k < 9 ? ", " : "},\n     {"); }
                    for (long k = 0; k < 10; ++k) { hex(out, column(k)); fprintf(out, k < 9 ? ", " : "}},\n"); }
                }
            }
            fprintf(out, "};\n");
        }
        fprintf(out, "\nconst pf_detector pf_frontal_detectors[PF_FRONTAL_DETECTORS] = {\n");
        for (unsigned long d = 0; d < detector.num_detectors(); ++d) {
            const auto &bank = detector.get_processed_w(d).get_detect_argument();
            fprintf(out, "    {%a, %lu, filters%lu},\n", detector.get_processed_w(d).w(dims), bank.num_separable_filters(), d);
        }
        const auto overlap = detector.get_overlap_tester();
        fprintf(out, "};\n\nconst double pf_frontal_iou = %a, pf_frontal_covered = %a;\n", overlap.get_iou_thresh(),
                overlap.get_percent_covered_thresh());
        return 0;
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error building dlib's face detector");
    }
    return -1;
}

extern "C" int64_t pf_reference_features(const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                                         int32_t level, float *planes, size_t capacity, int32_t *rows, int32_t *columns,
                                         char *message, size_t size) {
    if (!grey || width <= 0 || height <= 0 || stride < size_t(width) || level < 0 || !rows || !columns) {
        say(message, size, "pf_reference_features: invalid arguments");
        return -1;
    }
    try {
        dlib::array2d<unsigned char> image(height, width);
        for (int32_t y = 0; y < height; ++y) std::memcpy(&image[y][0], grey + size_t(y) * stride, size_t(width));
        dlib::array2d<unsigned char> down;
        for (int32_t l = 0; l < level; ++l) {
            dlib::pyramid_down<3>()(image, down);
            dlib::swap(image, down);
        }
        dlib::array<dlib::array2d<float>> hog;
        if (image.size() > 0) dlib::extract_fhog_features(image, hog, 8, 10, 10);
        *rows = hog.size() ? int32_t(hog[0].nr()) : 0;
        *columns = hog.size() ? int32_t(hog[0].nc()) : 0;
        const size_t plane = size_t(*rows) * size_t(*columns), count = hog.size() * plane;
        if (planes && capacity >= count) {
            for (size_t i = 0; i < hog.size(); ++i)
                for (long r = 0; r < hog[i].nr(); ++r)
                    std::memcpy(planes + i * plane + size_t(r) * size_t(*columns), &hog[i][r][0],
                                size_t(*columns) * sizeof(float));
        }
        return int64_t(count);
    } catch (const std::exception &error) {
        say(message, size, error.what());
    } catch (...) {
        say(message, size, "unknown error in dlib's fHOG");
    }
    return -1;
}
