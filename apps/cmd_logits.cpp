// `deltaserve logits`: token ids -> logits of every prompt position (and optionally N greedy
// decode steps with the cache) written to a safetensors file; the cross-implementation check.
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "commands.h"
#include "core/check.h"
#include "core/file_io.h"
#include "device_flags.h"
#include "gpu/device_logits_job.h"
#include "runner/logits_job.h"

namespace ds::cli {

namespace {

struct LogitsArgs {
  std::string model, tokens, tokens_file, out;
  int decode = 0;
  DeviceFlags device;
};

std::vector<int32_t> prompt_tokens(const std::string& tokens, const std::string& tokens_file) {
  if (tokens.empty() == tokens_file.empty()) fail("give exactly one of --tokens or --tokens-file");
  return tokens_file.empty() ? parse_token_list(tokens, "--tokens") : read_token_file(tokens_file);
}

// Refuses an --out that is one of the files this command reads: the token file, or any file of the
// model folder (config.json, the safetensors shards and their index).
void check_out_is_not_an_input(const LogitsArgs& a) {
  namespace fs = std::filesystem;
  std::vector<std::string> inputs;
  if (!a.tokens_file.empty()) inputs.push_back(a.tokens_file);
  std::error_code ec;
  if (fs::is_directory(a.model, ec)) {
    for (const auto& e : fs::directory_iterator(a.model, ec)) inputs.push_back(e.path().string());
  } else {
    inputs.push_back(a.model);
  }
  for (const std::string& in : inputs)
    if (same_file(a.out, in))
      fail("--out {} is one of the inputs ({}); write the logits elsewhere", a.out, in);
}

void run_logits(const LogitsArgs& a) {
  DS_CHECK(a.decode >= 0, "--decode must be >= 0, got {}", a.decode);
  check_out_is_not_an_input(a);
  AtomicFile out(a.out);  // a bad output location fails here, before the model is loaded
  const std::vector<int32_t> ids = prompt_tokens(a.tokens, a.tokens_file);
  LogitsJobResult r;
  if (a.device.on_cuda()) {
    r = run_device_logits_job(*load_device_model(a.model, a.device), ids, a.decode);
  } else {
    check_cpu_device_flags(a.device);
    r = run_logits_job(*ModelRunner::load(a.model), ids, a.decode);
  }
  write_logits_job(out, r);
  fmt::print("wrote {}: logits [{}, {}]{}\n", a.out, ids.size(), r.vocab,
             a.decode > 0
                 ? fmt::format(", decode_tokens [{}], decode_logits [{}, {}]", a.decode, a.decode, r.vocab)
                 : "");
}

}  // namespace

void register_logits(CLI::App& app) {
  auto* cmd = app.add_subcommand("logits",
                                 "Run token ids through a checkpoint and write logits to a safetensors file");
  auto a = std::make_shared<LogitsArgs>();
  cmd->add_option("--model", a->model, "Model folder (config.json + *.safetensors)")->required();
  cmd->add_option("--tokens", a->tokens, "Prompt token ids, comma separated (e.g. 1,2,3)");
  cmd->add_option("--tokens-file", a->tokens_file, "File with one prompt token id per line");
  cmd->add_option("--out", a->out, "Output safetensors file: logits F32 [T, vocab]")->required();
  cmd->add_option("--decode", a->decode,
                  "Then greedily decode N tokens with the cache; adds decode_tokens I32 [N] and "
                  "decode_logits F32 [N, vocab] (decode_logits[j] = logits after feeding decode_tokens[j])");
  add_device_flags(*cmd, a->device);
  cmd->callback([a] { run_logits(*a); });
}

// Shared with cmd_generate.cpp.
std::vector<int32_t> cli_prompt_tokens(const std::string& tokens, const std::string& tokens_file) {
  return prompt_tokens(tokens, tokens_file);
}

}  // namespace ds::cli
