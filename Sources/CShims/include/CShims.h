#pragma once
/* The few libc and Linux calls Swift's Glibc module does not show (they need _GNU_SOURCE,
   or live in headers it leaves out), for System and the command line. The codecs' C
   (libjpeg's and libpng's longjmp exits) is CCodecs. */
#include "fs_glue.h"
#include "memory_glue.h"
#include "process_glue.h"
#include "event_glue.h"
