# OpenAI request bodies (completions and chat) as the HTTP server parses them.
ds_add_fuzzer(fuzz_openai_request SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_openai_request.cpp LIBS ds_server)
