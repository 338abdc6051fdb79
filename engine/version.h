// engine/version.h — the library's version, as CMake's project() states it (one place: the
// top-level CMakeLists.txt); the labs answer --version with it.
#pragma once

namespace hg {

// "0.1.0": major.minor.patch of this build.
const char* version();

}  // namespace hg
