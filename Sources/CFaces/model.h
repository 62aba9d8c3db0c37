#pragma once
/* The face model CFaces searches with (model.c, written from dlib's by scripts/face-model). */
#include <stdint.h>

enum {
    PF_FRONTAL_DETECTORS = 5, /* front, turned left, turned right, tilted either way */
    PF_TAPS = 10,             /* the window: 10 x 10 cells of 8 px (80 x 80 px) */
    PF_PLANES = 31,           /* HOG planes: 18 signed orientations, 9 unsigned, 4 energies */
    PF_CELL = 8,
    PF_SMALLEST_LEVEL = 64,   /* the pyramid stops before a level's side is under 64 px */
};

/* One separable filter on one plane: the taps along a row, then along a column. */
typedef struct pf_separable {
    int32_t plane;
    float row[PF_TAPS];
    float column[PF_TAPS];
} pf_separable;

/* One detector: a window scores the sum of its filters; it is a face at `threshold` and over. */
typedef struct pf_detector {
    double threshold;
    int32_t count;
    const pf_separable *filters; /* by plane, in the order dlib adds them */
} pf_detector;

extern const pf_detector pf_frontal_detectors[PF_FRONTAL_DETECTORS];
/* Two windows are one face when their intersection over union is above `iou`, or when the
   intersection covers more than `covered` of either. */
extern const double pf_frontal_iou, pf_frontal_covered;
