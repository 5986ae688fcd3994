// `deltaserve generate`: greedy generation from token ids (ids in, ids out until the tokenizer lands).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "commands.h"
#include "core/check.h"
#include "runner/logits_job.h"

namespace ds::cli {

std::vector<int32_t> cli_prompt_tokens(const std::string& tokens, const std::string& tokens_file);

namespace {

struct GenerateArgs {
  std::string model, tokens, tokens_file;
  int max_tokens = 16;
  bool ignore_eos = false;
};

void run_generate(const GenerateArgs& a) {
  DS_CHECK(a.max_tokens >= 0, "--max-tokens must be >= 0, got {}", a.max_tokens);
  const std::vector<int32_t> ids = cli_prompt_tokens(a.tokens, a.tokens_file);
  const auto runner = ModelRunner::load(a.model);
  const std::vector<int32_t> out = greedy_generate(*runner, ids, a.max_tokens, !a.ignore_eos);
  fmt::print("{}\n", fmt::join(out, ","));
}

}  // namespace

void register_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Greedy generation from token ids");
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("--model", a->model, "Model folder (config.json + *.safetensors)")->required();
  cmd->add_option("--tokens", a->tokens, "Prompt token ids, comma separated (e.g. 1,2,3)");
  cmd->add_option("--tokens-file", a->tokens_file, "File with one prompt token id per line");
  cmd->add_option("--max-tokens", a->max_tokens, "Number of tokens to generate (default 16)");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at eos_token_id");
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace ds::cli
