# cmake/sources.cmake — the library's sources, in one list that both builds read: CMakeLists.txt,
# and the GPU emulation (tests/gpu/emulation/run, through cmake/list-sources.cmake), so a new
# folder, or a file with flags of its own, cannot be left out of either.
#
# In:  HANDGRAD_SOURCE_ROOT  the repository root
#      HANDGRAD_X86_GNU      ON when the compiler is GCC or clang on x86-64 (the CPU kernel levels)
# Out: HANDGRAD_CPP_SOURCES          the C++ sources of every build (absolute paths)
#      HANDGRAD_VIZ_SOURCES          viz/*.cpp, what draws a computation (not the emulation's)
#      HANDGRAD_CUDA_HOST_SOURCES    cuda/*.cpp, the host side of the CUDA backend
#      HANDGRAD_CUDA_KERNEL_SOURCES  cuda/*.cu, the kernels
#      HANDGRAD_NO_CUDA_SOURCE       what a build without CUDA compiles instead of both
#      HANDGRAD_SOURCE_FLAGS         "relative/path.cpp|opt opt ..." for files with options of their own
#      HANDGRAD_SOURCE_DEFINES       "relative/path.cpp|DEF=1 DEF=2" for files with definitions of their own
if(CMAKE_SCRIPT_MODE_FILE)
  set(_hg_depends "")
else()
  set(_hg_depends CONFIGURE_DEPENDS)
endif()
set(_hg ${HANDGRAD_SOURCE_ROOT})

# The library's layers (docs/layout.md): every .cpp in these folders.
set(HANDGRAD_SOURCE_FOLDERS engine cpu ops nn)
set(HANDGRAD_CPP_SOURCES "")
foreach(dir ${HANDGRAD_SOURCE_FOLDERS})
  file(GLOB _hg_files ${_hg_depends} ${_hg}/${dir}/*.cpp)
  list(APPEND HANDGRAD_CPP_SOURCES ${_hg_files})
endforeach()
# What draws a computation (viz/: DOT, the step-through page and its live form), built into the
# library above ops/ with the page's own files embedded (CMakeLists.txt); the GPU emulation, which
# runs kernels, leaves it out.
file(GLOB HANDGRAD_VIZ_SOURCES ${_hg_depends} ${_hg}/viz/*.cpp)
file(GLOB HANDGRAD_CUDA_HOST_SOURCES ${_hg_depends} ${_hg}/cuda/*.cpp)
list(REMOVE_ITEM HANDGRAD_CUDA_HOST_SOURCES ${_hg}/cuda/no_cuda.cpp)
file(GLOB HANDGRAD_CUDA_KERNEL_SOURCES ${_hg_depends} ${_hg}/cuda/*.cu)
set(HANDGRAD_NO_CUDA_SOURCE ${_hg}/cuda/no_cuda.cpp)

# handgrad's own hot CPU loops, once per instruction-set level behind one table chosen at start-up
# (cpu/kernels.h). The rest of the library stays baseline x86-64. Contraction off in the level
# files alone keeps every level's bits the same (the tests hold them to it). The wider levels
# exist on x86-64 with GCC or clang only.
set(HANDGRAD_SOURCE_FLAGS "cpu/level_baseline.cpp|-ffp-contract=off")
set(HANDGRAD_SOURCE_DEFINES "")
if(HANDGRAD_X86_GNU)
  list(APPEND HANDGRAD_SOURCE_FLAGS
    "cpu/level_avx2.cpp|-ffp-contract=off -mavx2 -mfma"
    "cpu/level_avx512.cpp|-ffp-contract=off -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma -mprefer-vector-width=512")
  list(APPEND HANDGRAD_SOURCE_DEFINES "cpu/kernels.cpp|HG_CPU_HAVE_AVX2=1 HG_CPU_HAVE_AVX512=1")
else()
  list(REMOVE_ITEM HANDGRAD_CPP_SOURCES ${_hg}/cpu/level_avx2.cpp ${_hg}/cpu/level_avx512.cpp)
endif()
