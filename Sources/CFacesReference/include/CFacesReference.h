#pragma once
/* dlib's own face detector, for the tests and the benchmarks alone (photofinish does not link
   it): the detector CFaces runs (dlib's frontal face detector's filters on a 2/3 pyramid),
   searched by dlib's code, and the table of filters CFaces compiles in, written from dlib's
   model. Every C++ object lives in reference.cpp; no exception leaves these functions. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One face as dlib draws it: its box in the pixels of the image searched (not clipped), and
   its confidence (the score over the detector's threshold). */
typedef struct pf_reference_face {
    int32_t x, y, width, height;
    double confidence;
} pf_reference_face;

/* The faces dlib's evaluate_detectors finds in an 8-bit grey image, in dlib's order (after
   its non-maximum suppression), with `adjust` added to the detector's thresholds (0: as
   trained; below 0 finds weaker windows too). Writes at most `capacity`, returns how many
   there are, or -1 with the reason in `message`. Makes dlib's detector on first use (about
   a second: dlib decodes its compressed model). */
int32_t pf_reference_find(const uint8_t *grey, int32_t width, int32_t height, size_t stride, double adjust,
                          pf_reference_face *found, int32_t capacity, char *message, size_t size);

/* dlib's own fHOG of pyramid level `level` of an 8-bit grey image (`level` times dlib's
   pyramid_down<3>, then extract_fhog_features, 8-pixel cells, the detector's 10-cell
   padding): what CFaces' pf_faces_features must give, float for float.
   Writes `rows` x `columns` floats a plane, plane after plane, when `capacity` floats hold
   them; returns the floats there are, or -1 with the reason in `message`. */
int64_t pf_reference_features(const uint8_t *grey, int32_t width, int32_t height, size_t stride, int32_t level,
                              float *planes,
                              size_t capacity, int32_t *rows, int32_t *columns, char *message, size_t size);

/* Writes the C source of CFaces' model table (Sources/CFaces/model.c) from dlib's model:
   scripts/face-model writes the file, FaceModelTests checks it. 0, or -1 with the reason. */
int32_t pf_reference_write_model(FILE *out, char *message, size_t size);

#ifdef __cplusplus
}
#endif
