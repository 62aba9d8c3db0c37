#pragma once
// LibRaw's C API, thread-safe build (libraw_r): several photos are read at once.
#include <libraw/libraw.h>
