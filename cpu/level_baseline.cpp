// cpu/level_baseline.cpp — the baseline level's kernel table (cpu/kernels.h); its
// instruction-set flags are set for this file alone in CMakeLists.txt.
#define HG_CPU_LEVEL baseline
#include "cpu/kernels_impl.h"
