# Fuzz target for the safetensors header parser (SafetensorsHeader::parse): untrusted file bytes.
ds_add_fuzzer(fuzz_safetensors SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_safetensors.cpp LIBS ds_model)
