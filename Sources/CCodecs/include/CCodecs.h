#pragma once
/* The codecs' C: libjpeg and libpng report errors by longjmp, which must never cross a
   Swift frame, so every function here sets its own jump point, calls the library, and
   returns a status code instead. Used by Codecs only; the OS glue System needs is CShims. */
#include "jpeg_glue.h"
#include "png_glue.h"
