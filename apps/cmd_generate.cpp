// `deltaserve generate`: token ids in, token ids out, through the engine (scheduler + prefix cache
// + the model executor: the CPU one, or with --device cuda the GPU one). Either one prompt (--tokens /
// --tokens-file; prints the generated ids) or a batch of requests from a JSONL file (--requests IN --out OUT;
// see generate_requests.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "commands.h"
#include "core/check.h"
#include "generate_requests.h"
#include "runner/logits_job.h"

namespace ds::cli {

std::vector<int32_t> cli_prompt_tokens(const std::string& tokens, const std::string& tokens_file);

namespace {

struct GenerateArgs {
  std::string model, tokens, tokens_file, requests, out;
  int max_tokens = 16;
  bool ignore_eos = false;
  EngineFlags engine;
};

void run_generate(const GenerateArgs& a) {
  DS_CHECK(a.max_tokens >= 0, "--max-tokens must be >= 0, got {}", a.max_tokens);
  if (!a.requests.empty()) {
    DS_CHECK(a.tokens.empty() && a.tokens_file.empty(),
             "--requests cannot be combined with --tokens/--tokens-file");
    DS_CHECK(!a.out.empty(), "--requests needs --out (the JSONL file to write)");
    run_request_file(a.model, a.requests, a.out, a.engine);
    return;
  }
  DS_CHECK(a.out.empty(), "--out is only used with --requests");
  const std::vector<int32_t> ids = cli_prompt_tokens(a.tokens, a.tokens_file);
  const std::vector<int32_t> out = generate_one(a.model, ids, a.max_tokens, !a.ignore_eos, a.engine);
  fmt::print("{}\n", fmt::join(out, ","));
}

}  // namespace

void register_generate(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("generate", "Generate token ids through the engine (one prompt or a JSONL batch)");
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("--model", a->model, "Model folder (config.json + *.safetensors)")->required();
  cmd->add_option("--tokens", a->tokens, "Prompt token ids, comma separated (e.g. 1,2,3)");
  cmd->add_option("--tokens-file", a->tokens_file, "File with one prompt token id per line");
  cmd->add_option("--max-tokens", a->max_tokens, "Number of tokens to generate for --tokens (default 16)");
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Do not stop at eos_token_id (--tokens)");
  cmd->add_option("--requests", a->requests,
                  "JSONL requests, one per line: {\"id\": str, \"tokens\": [int], \"max_tokens\": int, "
                  "\"after\": str?, ...} (see docs/architecture.md)");
  cmd->add_option("--out", a->out,
                  "JSONL results for --requests: {\"id\", \"output_tokens\", \"cached_tokens\", "
                  "\"prompt_tokens\", \"finish_reason\"} per request, in input order");
  add_engine_flags(*cmd, a->engine);
  cmd->callback([a] { run_generate(*a); });
}

}  // namespace ds::cli
