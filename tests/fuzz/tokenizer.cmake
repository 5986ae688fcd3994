# Tokenizer: ranks-file and tokenizer_config parsers, and encode/decode of arbitrary bytes.
ds_add_fuzzer(fuzz_tokenizer SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_tokenizer.cpp LIBS ds_tokenizer)
target_compile_definitions(fuzz_tokenizer PRIVATE DS_TEST_DATA_DIR="${CMAKE_SOURCE_DIR}/tests")
