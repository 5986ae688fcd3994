#include "generate_requests.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "engine/request_batch.h"

namespace ds::cli {
namespace {

std::string read_text(const std::string& path) {
  std::error_code ec;
  DS_CHECK(std::filesystem::is_regular_file(path, ec), "--requests {}: not a regular file", path);
  const auto size = std::filesystem::file_size(path, ec);
  DS_CHECK(!ec && size <= (uint64_t{1} << 30), "--requests {}: larger than 1 GiB or unreadable", path);
  std::ifstream f(path, std::ios::binary);
  DS_CHECK(f.good(), "--requests {}: cannot open ({})", path, std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    DS_CHECK(f.good(), "--out {}: cannot write ({})", path, std::strerror(errno));
    f << text;
    f.flush();
    DS_CHECK(f.good(), "--out {}: write failed ({})", path, std::strerror(errno));
  }
  DS_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "--out {}: cannot rename from {} ({})", path, tmp,
           std::strerror(errno));
}

}  // namespace

std::vector<int32_t> generate_one(const std::string& model_dir, const std::vector<int32_t>& prompt,
                                  int max_tokens, bool stop_at_eos, const EngineFlags& flags) {
  if (max_tokens == 0) return {};
  const auto runner = ModelRunner::load(model_dir);
  ModelExecutor exec(*runner, flags.page_tokens);
  VirtualClock clock;
  Engine engine(model_engine_config(exec, flags), exec, clock);
  BatchRequest r;
  r.id = "prompt";
  r.tokens = prompt;
  r.max_tokens = max_tokens;
  if (stop_at_eos) r.sampling.stop_token_ids = {int32_t(runner->config().eos_token_id)};
  for (int32_t t : prompt)
    DS_CHECK(t >= 0 && t < runner->config().vocab_size, "token id {} is outside the vocabulary [0, {})", t,
             runner->config().vocab_size);
  const BatchResult res = run_batch(engine, {r}).front();
  DS_CHECK(res.finish_reason != "rejected",
           "the prompt ({} tokens) does not fit in the cache budget (--kv-budget-tokens {})", prompt.size(),
           flags.kv_budget_tokens);
  return res.output_tokens;
}

void run_request_file(const std::string& model_dir, const std::string& requests_path,
                      const std::string& out_path, const EngineFlags& flags) {
  std::error_code ec;
  DS_CHECK(!std::filesystem::equivalent(requests_path, out_path, ec), "--out {} is the --requests file",
           out_path);
  const auto parent = std::filesystem::path(out_path).parent_path();
  DS_CHECK(parent.empty() || std::filesystem::is_directory(parent, ec), "--out {}: {} is not a directory",
           out_path, parent.string());
  const std::string text = read_text(requests_path);
  const auto runner = ModelRunner::load(model_dir);
  const std::vector<BatchRequest> requests =
      parse_batch_requests(text, requests_path, runner->config().vocab_size);
  ModelExecutor exec(*runner, flags.page_tokens);
  VirtualClock clock;
  Engine engine(model_engine_config(exec, flags), exec, clock);
  const std::vector<BatchResult> results = run_batch(engine, requests);
  write_atomically(out_path, format_batch_results(results));
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
