# Trace parsers (Claude Code session JSON, Mooncake JSONL) on arbitrary bytes.
ds_add_fuzzer(fuzz_trace SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_trace.cpp LIBS ds_trace)
