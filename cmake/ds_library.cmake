# ds_library(<name> DEPS ...): static library ds_<name> from every .cpp in the current folder
# (recursively, `cuda/` subfolders excluded). Skipped while the folder has no sources yet.
# With -DDS_CUDA=ON, the folder's `cuda/*.cu` and `cuda/*.cpp` join the library (sm_90a by default),
# which then defines DS_HAVE_CUDA for itself and its users and links the CUDA runtime.
function(ds_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  # Paths relative to the folder, so that a checkout under a directory named "cuda" is not excluded.
  file(GLOB_RECURSE rel RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  list(FILTER rel EXCLUDE REGEX "(^|/)cuda/")
  list(TRANSFORM rel PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ OUTPUT_VARIABLE srcs)
  if(NOT srcs)
    return()
  endif()
  add_library(ds_${name} STATIC ${srcs})
  target_include_directories(ds_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(ds_${name} PUBLIC ${ARG_DEPS})
  if(DS_CUDA)
    file(GLOB cuda_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/*.cu ${CMAKE_CURRENT_SOURCE_DIR}/cuda/*.cpp)
    if(cuda_srcs)
      target_sources(ds_${name} PRIVATE ${cuda_srcs})
      target_compile_definitions(ds_${name} PUBLIC DS_HAVE_CUDA=1)
      target_link_libraries(ds_${name} PUBLIC CUDA::cudart_static)
      # All work goes to the calling thread's default stream (per-thread, not the legacy stream), so
      # that a decode step can be recorded by stream capture (kernels/graph.h).
      target_compile_options(ds_${name} PRIVATE
                             $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo --expt-relaxed-constexpr --default-stream=per-thread>)
      target_compile_definitions(ds_${name} PRIVATE CUDA_API_PER_THREAD_DEFAULT_STREAM=1)
    endif()
  endif()
endfunction()
