# ds_library(<name> DEPS ...): static library ds_<name> from every .cpp in the current folder
# (recursively, CUDA sources excluded). Skipped while the folder has no sources yet.
function(ds_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER srcs EXCLUDE REGEX "/cuda/")
  if(NOT srcs)
    return()
  endif()
  add_library(ds_${name} STATIC ${srcs})
  target_include_directories(ds_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(ds_${name} PUBLIC ${ARG_DEPS})
endfunction()
