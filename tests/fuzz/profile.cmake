# Model/hardware profile parsing, the memory planner and the cost model on arbitrary JSON.
ds_add_fuzzer(fuzz_profile SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_profile.cpp LIBS ds_plan)
