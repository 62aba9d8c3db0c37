#pragma once
/* The C that must be C: libjpeg and libpng report errors by longjmp, which must never
   cross a Swift frame (every function there sets its own jump point, calls the library, and
   returns a status code instead); and the few libc calls Swift's Glibc module does not show. */
#include "jpeg_glue.h"
#include "png_glue.h"
#include "fs_glue.h"
#include "memory_glue.h"
#include "process_glue.h"
#include "event_glue.h"
