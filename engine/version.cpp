#include "engine/version.h"

// CMakeLists.txt defines HANDGRAD_VERSION for this file from project(handgrad VERSION ...).
#ifndef HANDGRAD_VERSION
#define HANDGRAD_VERSION "unknown (built without the project's CMakeLists.txt)"
#endif

namespace hg {

const char* version() { return HANDGRAD_VERSION; }

}  // namespace hg
