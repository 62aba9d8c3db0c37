// Face detectors side by side on photos (bench/subject/faces.sh runs it): each photo is made
// grey and resampled so its short side is SHORT pixels (its long side at most 2 × SHORT), searched REPEATS times, and the median
// CPU time of one search (this thread's user+sys: the machine may be shared) and the faces
// found (x y w h as fractions of the photo) are printed, one line a photo.
//
//   detectors KIND SHORT REPEATS PHOTO...
//   KIND: photofinish  dlib's HOG frontal face detector as PhotoFinish runs it (Sources/CFaces;
//                      AVX2 filtering when the CPU has it)
//         photofinish-sse2  the same with dlib's own (SSE2) pyramid, fHOG and filtering
//         dlib         the same detector on the pyramid it was trained with (pyramid_down<6>)
//         lbp          OpenCV's LBP cascade lbpcascade_frontalface_improved.xml (45 px window)
//         lbp24        OpenCV's older LBP cascade lbpcascade_frontalface.xml (24 px window)
//         haar         OpenCV's Haar cascade haarcascade_frontalface_default.xml (24 px window)
// OpenCV runs on this thread alone (cv::setNumThreads(0)), scale step 1.1, 3 neighbours.
#include "CFaces.h"

#include <dlib/image_processing/frontal_face_detector.h>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

static double cpu_ms() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: detectors photofinish|photofinish-sse2|dlib|lbp|lbp24|haar SHORT REPEATS PHOTO...\n");
        return 2;
    }
    const std::string kind = argv[1];
    const int shortSide = atoi(argv[2]), repeats = std::max(1, atoi(argv[3]));
    cv::setNumThreads(0);
    const std::string data = "/usr/share/opencv4/";
    cv::CascadeClassifier cascade;
    int window = 24;
    if (kind == "lbp") { cascade.load(data + "lbpcascades/lbpcascade_frontalface_improved.xml"); window = 45; }
    if (kind == "lbp24") cascade.load(data + "lbpcascades/lbpcascade_frontalface.xml");
    if (kind == "haar") cascade.load(data + "haarcascades/haarcascade_frontalface_default.xml");
    if ((kind == "lbp" || kind == "lbp24" || kind == "haar") && cascade.empty()) {
        fprintf(stderr, "detectors: no cascade for %s under %s (opencv-data)\n", kind.c_str(), data.c_str());
        return 1;
    }
    double start = cpu_ms();
    char message[256] = "";
    pf_faces *faces = kind == "photofinish"        ? pf_faces_new(message, sizeof message)
                      : kind == "photofinish-sse2" ? pf_faces_new_simd(0, message, sizeof message)
                                                   : nullptr;
    const bool ours = kind == "photofinish" || kind == "photofinish-sse2";
    dlib::frontal_face_detector trained;
    if (kind == "dlib") trained = dlib::get_frontal_face_detector();
    if (ours && !faces) { fprintf(stderr, "detectors: %s\n", message); return 1; }
    printf("# %s: made in %.0f ms of CPU\n", kind.c_str(), cpu_ms() - start);
    for (int f = 4; f < argc; f++) {
        cv::Mat photo = cv::imread(argv[f], cv::IMREAD_GRAYSCALE);
        if (photo.empty()) { printf("%s: unreadable\n", argv[f]); continue; }
        // As PhotoFinish searches: the short side SHORT, the long side at most twice that.
        const double k = std::min(double(shortSide) / std::min(photo.cols, photo.rows),
                                  2.0 * shortSide / std::max(photo.cols, photo.rows));
        cv::Mat grey;
        cv::resize(photo, grey, cv::Size(), k, k, k < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
        std::vector<double> times;
        std::vector<cv::Rect> found;
        for (int r = 0; r < repeats; r++) {
            found.clear();
            const double t = cpu_ms();
            if (ours) {
                pf_face out[64];
                int n = pf_faces_find(faces, grey.data, grey.cols, grey.rows, grey.step, out, 64, message, sizeof message);
                for (int i = 0; i < n && i < 64; i++) found.push_back(cv::Rect(out[i].x, out[i].y, out[i].width, out[i].height));
            } else if (kind == "dlib") {
                dlib::array2d<unsigned char> image(grey.rows, grey.cols);
                for (int y = 0; y < grey.rows; y++) memcpy(&image[y][0], grey.ptr(y), grey.cols);
                for (auto &d : trained(image)) found.push_back(cv::Rect(d.left(), d.top(), d.width(), d.height()));
            } else {
                cascade.detectMultiScale(grey, found, 1.1, 3, 0, cv::Size(window, window));
            }
            times.push_back(cpu_ms() - t);
        }
        std::sort(times.begin(), times.end());
        printf("%s %dx%d %.2f ms:", argv[f], grey.cols, grey.rows, times[times.size() / 2]);
        for (auto &r : found)
            printf(" %.4f,%.4f,%.4f,%.4f", r.x / double(grey.cols), r.y / double(grey.rows), r.width / double(grey.cols),
                   r.height / double(grey.rows));
        printf("\n");
    }
    pf_faces_free(faces);
}
