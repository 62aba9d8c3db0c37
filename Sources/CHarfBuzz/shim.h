#pragma once
// HarfBuzz alone (hb-ot font functions from the font file's bytes): no hb-ft, so FreeType's
// types are declared by one module only (CFreeType).
#include <hb.h>
#include <hb-ot.h>
