# cmake/list-sources.cmake — prints cmake/sources.cmake's list for a build that is not CMake's
# (tests/gpu/emulation/run): one line per source, "path<TAB>options<TAB>definitions" (options and
# definitions separated by spaces, either may be empty); the CUDA backend's sources included.
#   cmake -DHANDGRAD_SOURCE_ROOT=DIR -DHANDGRAD_X86_GNU=ON -P cmake/list-sources.cmake
include(${CMAKE_CURRENT_LIST_DIR}/sources.cmake)

# What the list named `entries` holds for the source `rel`: the text after "|" of its entry
# "rel|text", or "" when it has none.
function(entry_of entries rel out)
  set(found "")
  foreach(entry ${${entries}})
    string(FIND "${entry}" "|" bar)
    string(SUBSTRING "${entry}" 0 ${bar} file)
    math(EXPR bar "${bar} + 1")
    if(file STREQUAL rel)
      string(SUBSTRING "${entry}" ${bar} -1 found)
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

foreach(src ${HANDGRAD_CPP_SOURCES} ${HANDGRAD_CUDA_HOST_SOURCES} ${HANDGRAD_CUDA_KERNEL_SOURCES})
  file(RELATIVE_PATH rel ${HANDGRAD_SOURCE_ROOT} ${src})
  entry_of(HANDGRAD_SOURCE_FLAGS "${rel}" opts)
  entry_of(HANDGRAD_SOURCE_DEFINES "${rel}" defs)
  string(REGEX REPLACE "([^ ]+)" "-D\\1" defs "${defs}")
  message("${src}\t${opts}\t${defs}")
endforeach()
