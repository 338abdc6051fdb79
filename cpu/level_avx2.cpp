// cpu/level_avx2.cpp — the avx2 level's kernel table (cpu/kernels.h); its
// instruction-set flags are set for this file alone in CMakeLists.txt.
#define HG_CPU_LEVEL avx2
#include "cpu/kernels_impl.h"
