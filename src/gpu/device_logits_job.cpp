#include "gpu/device_logits_job.h"

#include <algorithm>

#include "core/check.h"

namespace ds {

LogitsJobResult run_device_logits_job(const DeviceModel& model, const std::vector<int32_t>& tokens,
                                      int n_decode) {
  DS_CHECK(!tokens.empty(), "logits: empty prompt");
  DS_CHECK(n_decode >= 0, "logits: {} decode steps", n_decode);
  constexpr int64_t kPageTokens = 64;
  const int64_t V = model.config().vocab_size, total = int64_t(tokens.size()) + n_decode;
  DevicePools pools = model.make_pools(model.device(), false, kPageTokens);
  std::vector<int32_t> pages;
  for (int32_t p = 0; int64_t(p) * kPageTokens < total; ++p) pages.push_back(p);
  if (!pages.empty()) pools.reserve_pages(pages.back());
  pools.zero_slot(0);
  DeviceSeqStep s;
  s.tokens = tokens, s.pages = pages, s.live_slot = 0, s.logits = LogitsWant::All;
  LogitsJobResult r;
  r.vocab = V;
  r.logits = model.forward(DeviceStep{{s}}, pools).logits[0];
  int32_t next = int32_t(std::max_element(r.logits.end() - V, r.logits.end()) - (r.logits.end() - V));
  r.decode_tokens.reserve(size_t(n_decode));
  for (int j = 0; j < n_decode; ++j) {
    r.decode_tokens.push_back(next);
    s.tokens = std::span(r.decode_tokens).subspan(size_t(j), 1);
    s.n_past = int64_t(tokens.size()) + j;
    s.logits = LogitsWant::Last;
    const std::vector<float> l = model.forward(DeviceStep{{s}}, pools).logits[0];
    r.decode_logits.insert(r.decode_logits.end(), l.begin(), l.end());
    next = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
  }
  return r;
}

}  // namespace ds
