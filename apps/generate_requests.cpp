#include "generate_requests.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/file_io.h"
#include "engine/request_batch.h"

namespace ds::cli {

constexpr int64_t kMaxRequestFileBytes = int64_t{1} << 30;

std::vector<int32_t> generate_one(const std::string& model_dir, const std::vector<int32_t>& prompt,
                                  int max_tokens, bool stop_at_eos, const EngineFlags& flags) {
  if (max_tokens == 0) return {};
  const ModelBackend m = load_model_backend(model_dir, flags);
  VirtualClock clock;
  Engine engine(model_engine_config(m.sizes, flags), *m.exec, clock);
  BatchRequest r;
  r.id = "prompt";
  r.tokens = prompt;
  r.max_tokens = max_tokens;
  if (stop_at_eos) r.sampling.stop_token_ids = {int32_t(m.config().eos_token_id)};
  for (int32_t t : prompt)
    DS_CHECK(t >= 0 && t < m.config().vocab_size, "token id {} is outside the vocabulary [0, {})", t,
             m.config().vocab_size);
  const BatchResult res = run_batch(engine, {r}).front();
  DS_CHECK(res.finish_reason != "rejected",
           "the prompt ({} tokens) does not fit in the cache budget (--kv-budget-tokens {})", prompt.size(),
           flags.kv_budget_tokens);
  return res.output_tokens;
}

void run_request_file(const std::string& model_dir, const std::string& requests_path,
                      const std::string& out_path, const EngineFlags& flags) {
  DS_CHECK(!same_file(requests_path, out_path), "--out {} is the --requests file", out_path);
  AtomicFile out(out_path);  // a location that cannot be written fails before any work
  const std::string text = read_file_capped(requests_path, kMaxRequestFileBytes, "requests file");
  const ModelBackend m = load_model_backend(model_dir, flags);
  const std::vector<BatchRequest> requests = parse_batch_requests(text, requests_path, m.config().vocab_size);
  VirtualClock clock;
  Engine engine(model_engine_config(m.sizes, flags), *m.exec, clock);
  const std::vector<BatchResult> results = run_batch(engine, requests);
  out.write(format_batch_results(results));
  out.commit();
  int64_t cached = 0, prompt = 0, rejected = 0;
  for (const BatchResult& r : results) {
    cached += r.cached_tokens;
    prompt += r.prompt_tokens;
    rejected += r.finish_reason == "rejected";
  }
  fmt::print("wrote {}: {} requests, {} of {} prompt tokens from the prefix cache, {} rejected\n", out_path,
             results.size(), cached, prompt, rejected);
}

}  // namespace ds::cli
