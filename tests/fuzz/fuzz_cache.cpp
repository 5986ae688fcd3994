// libFuzzer target: bytes -> cache config + operation sequence (tests/cache/cache_op_driver.h).
// Any ds::Error from check_invariants() or a driver check is a finding: abort so the fuzzer stops.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cache_op_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ds::test::ByteSource in(std::span<const uint8_t>(data, size));
  try {
    const ds::CacheConfig cfg = ds::test::driver_config(in);
    ds::test::CacheOpDriver driver(cfg);
    driver.run(in, 400);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_cache: %s\n", e.what());
    std::abort();
  }
  return 0;
}
