// cpu/level_avx512.cpp — the avx512 level's kernel table (cpu/kernels.h); its
// instruction-set flags are set for this file alone in CMakeLists.txt.
#define HG_CPU_LEVEL avx512
#include "cpu/kernels_impl.h"
