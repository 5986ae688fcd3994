# Fuzz target for the prefix cache: the property-test driver fed from fuzzer bytes.
ds_add_fuzzer(fuzz_cache SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_cache.cpp LIBS ds_cache)
target_include_directories(fuzz_cache PRIVATE ${CMAKE_SOURCE_DIR}/tests/cache)
