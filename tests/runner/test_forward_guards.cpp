// Forward guards on the tiny fixture: a prompt beyond the model's maximum length and a batch whose
// memory estimate exceeds the limit are rejected before any work; NaN weights give an error, not
// token 0; the memory estimate grows with the batch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "error_message.h"
#include "golden_fixture.h"
#include "runner/logits_job.h"

namespace ds {
namespace {

namespace fs = std::filesystem;
using namespace ds::testing;

// A copy of the tiny fixture with config.json edited by `edit` and, when `nan_tensor` is set, the
// first value of that BF16 tensor replaced by NaN.
std::string fixture_copy(const std::string& tag, const std::function<void(nlohmann::json&)>& edit,
                         const std::string& nan_tensor = "") {
  const fs::path dir = fs::temp_directory_path() / ("ds_guard_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(kTinyDir + "/config.json"));
  edit(cfg);
  std::ofstream(dir / "config.json") << cfg.dump();
  std::ifstream in(kTinyDir + "/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!nan_tensor.empty()) {
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    const auto header = nlohmann::json::parse(bytes.substr(8, n));
    const size_t at = 8 + n + header.at(nan_tensor).at("data_offsets")[0].get<size_t>();
    bytes[at] = char(0xc0), bytes[at + 1] = char(0x7f);  // bf16 0x7fc0: quiet NaN
  }
  std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes;
  return dir.string();
}

TEST(ForwardGuards, PromptBeyondTheModelMaximumIsRejected) {
  const std::string dir = fixture_copy("maxlen", [](nlohmann::json& c) { c["model_max_length"] = 8; });
  const auto runner = ModelRunner::load(dir);
  EXPECT_NO_THROW(run_logits_job(*runner, std::vector<int32_t>(8, 1), 0));
  EXPECT_EQ(error_message([&] { run_logits_job(*runner, std::vector<int32_t>(9, 1), 0); }),
            "forward: sequence 0 would hold 9 tokens, more than the model's maximum of 8");
  // Decoding past the limit fails at the step that would cross it.
  EXPECT_NE(error_message([&] {
              run_logits_job(*runner, std::vector<int32_t>(7, 1), 3);
            }).find("more than the model's"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(ForwardGuards, MemoryEstimateIsCheckedBeforeAllocating) {
  RunnerOptions opt;
  opt.max_forward_bytes = int64_t{1} << 20;  // 1 MiB
  const auto runner = ModelRunner::load(kTinyDir, opt);
  SequenceState st = runner->new_sequence();
  const std::vector<int32_t> one(1, 1), many(4096, 1);
  ForwardBatch small, big;
  small.seqs.push_back({one, &st, LogitsWant::Last, {}});
  big.seqs.push_back({many, &st, LogitsWant::All, {}});
  EXPECT_LT(runner->forward_bytes_estimate(small), opt.max_forward_bytes);
  EXPECT_GT(runner->forward_bytes_estimate(big), 4096 * int64_t(runner->config().vocab_size) * 4);
  const std::string err = error_message([&] { runner->forward(big); });
  EXPECT_NE(err.find("forward: this batch (1 sequences, 4096 new tokens) needs about"), std::string::npos)
      << err;
  EXPECT_NE(err.find("more than the 1.0 MiB available"), std::string::npos) << err;
  EXPECT_EQ(st.n_tokens, 0);  // rejected before any work
  EXPECT_NO_THROW(runner->forward(small));
}

TEST(ForwardGuards, NanWeightsAreAnErrorNotTokenZero) {
  const std::string dir = fixture_copy(
      "nan", [](nlohmann::json&) {}, "model.norm.weight");
  const auto runner = ModelRunner::load(dir);
  EXPECT_NE(error_message([&] {
              run_logits_job(*runner, {1, 2, 3}, 2);
            }).find("non-finite logits"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              run_logits_job(*runner, {1, 2, 3}, 0);
            }).find("the weights or the inputs hold NaN"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ds
