// libFuzzer target: bytes = a whole safetensors file. SafetensorsHeader::parse must either throw
// ds::Error or return a header whose every tensor range lies inside the file, matches
// numel * dtype size and overlaps no other. Anything else (another exception, a crash, a
// sanitizer report, a violated invariant) is a finding: abort so the fuzzer stops.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <utility>
#include <vector>

#include "core/check.h"
#include "model/safetensors.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what);
  std::abort();
}

void check_invariants(const ds::SafetensorsHeader& h, size_t size) {
  if (h.data_start < 8 || h.data_start > size) finding("data_start outside the file");
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const auto& [name, t] : h.tensors) {
    const size_t begin = h.offset.at(name);
    if (t.numel() < 0 || size_t(t.numel()) * ds::dtype_size(t.dtype) != t.n_bytes)
      finding("n_bytes != numel * size");
    if (begin > size - h.data_start || t.n_bytes > size - h.data_start - begin) finding("range past EOF");
    ranges.emplace_back(begin, begin + t.n_bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) finding("overlapping ranges accepted");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ds::SafetensorsHeader h =
        ds::SafetensorsHeader::parse(std::span<const uint8_t>(data, size), size, "fuzz");
    check_invariants(h, size);
  } catch (const ds::Error&) {
    // Rejected input: the expected outcome for most mutations.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_safetensors: unexpected exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
