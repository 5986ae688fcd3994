// The `deltaserve logits` code path (run_logits_job, write_logits_job, token parsing) on the tiny
// fixture: the written safetensors file holds the golden logits / decode tensors with the right
// names, dtypes and shapes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/check.h"
#include "golden_fixture.h"
#include "runner/logits_job.h"

namespace ds {
namespace {

using namespace ds::testing;

std::vector<float> read_f32(const SafetensorsFile& f, const std::string& name, std::vector<int64_t> shape) {
  const TensorRef* t = f.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->dtype, DType::F32) << name;
  EXPECT_EQ(t->shape, shape) << name;
  std::vector<float> v(size_t(t->numel()));
  std::memcpy(v.data(), t->data, v.size() * 4);
  return v;
}

TEST(LogitsJob, WritesLogitsAndDecodeTensors) {
  const std::vector<int32_t> ids = golden_i32("prompt_65.input_ids");
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ds_logits_job_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  write_logits_job(path, run_logits_job(tiny_runner(), ids, 8));
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->tensors().size(), 3u);
  expect_close(read_f32(*f, "logits", {65, 512}), golden_f32("prompt_65.logits"), kLogitAtol, kLogitRtol,
               "file.logits");
  expect_close(read_f32(*f, "decode_logits", {8, 512}), golden_f32("decode.step_logits"), kLogitAtol,
               kLogitRtol, "file.decode_logits");
  const TensorRef* tok = f->find("decode_tokens");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->dtype, DType::I32);
  EXPECT_EQ(tok->shape, std::vector<int64_t>{8});
  std::vector<int32_t> got(8);
  std::memcpy(got.data(), tok->data, 32);
  EXPECT_EQ(got, golden_i32("decode.tokens"));
  f.reset();
  std::filesystem::remove(path);
}

TEST(LogitsJob, WithoutDecodeWritesOnlyLogits) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ds_logits_job1_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  write_logits_job(path, run_logits_job(tiny_runner(), golden_i32("prompt_5.input_ids"), 0));
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->tensors().size(), 1u);
  expect_close(read_f32(*f, "logits", {5, 512}), golden_f32("prompt_5.logits"), kLogitAtol, kLogitRtol,
               "file.logits5");
  f.reset();
  std::filesystem::remove(path);
}

TEST(LogitsJob, TokenParsing) {
  EXPECT_EQ(parse_token_list("1,2, 3\n4", "t"), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_THROW(parse_token_list("1,x", "t"), Error);
  EXPECT_THROW(parse_token_list("-1", "t"), Error);
  EXPECT_THROW(parse_token_list(" , ", "t"), Error);
  EXPECT_THROW(read_token_file("/nonexistent/tokens.txt"), Error);
}

TEST(LogitsJob, BadRequestsThrow) {
  EXPECT_THROW(run_logits_job(tiny_runner(), {1, 512}, 0), Error);  // outside the vocab
  EXPECT_THROW(run_logits_job(tiny_runner(), {}, 0), Error);
  EXPECT_THROW(run_logits_job(tiny_runner(), {1}, -1), Error);
  EXPECT_THROW(ModelRunner::load("/nonexistent/model"), Error);
}

}  // namespace
}  // namespace ds
