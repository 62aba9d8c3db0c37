#pragma once
/* The face detector: dlib's HOG frontal face detector (get_frontal_face_detector()'s five
   filters, compiled in from model.c: no model file) searched by dlib, behind a C interface. Every C++
   object lives in faces.cpp; the caller owns one pf_faces and nothing else. No C++
   exception ever leaves these functions: they return a status and copy the message. */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One face: its box in the pixels of the image searched (clipped to it), and the
   detector's confidence (above 0: a face; higher is surer). */
typedef struct pf_face {
    int32_t x, y, width, height;
    double confidence;
} pf_face;

/* The detector, made once (its filter banks filled from model.c: microseconds) and shared:
   pf_faces_find may be called from many threads at once on one detector. */
typedef struct pf_faces pf_faces;

/* A new detector, or NULL with the reason in `message` (at most `size` bytes, terminated). */
pf_faces *pf_faces_new(char *message, size_t size);

/* The same with the code chosen: CFaces' AVX2 pyramid, fHOG and filtering (avx2 != 0: NULL
   when the CPU has none) or dlib's own, SSE2. Both find the same faces with the same
   confidences, to the bit.
   pf_faces_new takes AVX2 when the CPU has it, unless PHOTOFINISH_SIMD=sse2. */
pf_faces *pf_faces_new_simd(int32_t avx2, char *message, size_t size);

/* 1 when the CPU has AVX2; 1 when `faces` filters with it. */
int32_t pf_faces_cpu_has_avx2(void);
int32_t pf_faces_avx2(const pf_faces *faces);

/* Frees the detector; NULL is allowed. */
void pf_faces_free(pf_faces *faces);

/* The smallest face box the detector finds, in pixels of the image searched (its 80 px
   window holds a face box of about this size). */
int32_t pf_faces_smallest(void);

/* The most memory pf_faces_find holds at once for an image of `width` x `height` (its copy,
   two pyramid levels, every level's features and what making and searching them takes). */
size_t pf_faces_working_bytes(int32_t width, int32_t height);

/* The 31 fHOG planes the detector computes of pyramid level `level` of one 8-bit grey image
   (0: the image itself; each level 2/3 of the one before), with AVX2 (avx2 != 0: -1 when the
   CPU has none) or with dlib's own code, as CFacesReference's pf_reference_features gives
   dlib's (the tests compare them). Writes `rows` x `columns`
   floats a plane, plane after plane, when `capacity` floats hold them; returns the floats
   there are (0 for an image too small), or -1 with the reason in `message`. */
int64_t pf_faces_features(int32_t avx2, const uint8_t *grey, int32_t width, int32_t height, size_t stride,
                          int32_t level, float *planes, size_t capacity, int32_t *rows, int32_t *columns, char *message, size_t size);

/* Finds the upright, roughly frontal faces (turned up to about 45 degrees) in an 8-bit grey
   image of `width` x `height` pixels, rows `stride` bytes apart. Writes at most `capacity`
   faces, strongest first, and returns how many were found (which may be more), or -1 with the
   reason in `message`. An image smaller than the detector's window simply has no faces. */
int32_t pf_faces_find(const pf_faces *faces, const uint8_t *grey, int32_t width, int32_t height,
                      size_t stride, pf_face *found, int32_t capacity, char *message, size_t size);

#ifdef __cplusplus
}
#endif
