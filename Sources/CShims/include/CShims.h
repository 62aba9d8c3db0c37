#pragma once
/* The C that must be C: libjpeg and libpng report errors by longjmp, which must never
   cross a Swift frame. Every function here sets its own jump point, calls the library,
   and returns a status code instead. */
#include "jpeg_glue.h"
#include "png_glue.h"
#include "fs_glue.h"
