// `deltaserve bench tokenizer`: encoding speed (MB/s of UTF-8 input, best of N single-threaded
// runs, CPU time) of the BPE tokenizer on a text file. scripts/bench_tokenizer.sh runs it next to
// the npm tiktoken encoder on the same ranks, pattern and text.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "core/check.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"

namespace ds::cli {
namespace {

double cpu_now_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct BenchTokenizerOptions {
  std::string tokenizer;  // a checkpoint folder or a tiktoken.model file
  std::string pattern = "kimi";
  std::string text;
  int repeats = 5;
  bool print_pattern = false;
};

void run(const BenchTokenizerOptions& o) {
  std::shared_ptr<const tok::Tokenizer> t;
  if (std::filesystem::is_directory(o.tokenizer)) {
    t = tok::load_tokenizer_dir(o.tokenizer).tokenizer;
  } else {
    const char* pat = o.pattern == "kimi"     ? tok::kKimiPattern
                      : o.pattern == "cl100k" ? tok::kCl100kPattern
                      : o.pattern == "o200k"  ? tok::kO200kPattern
                                              : nullptr;
    DS_CHECK(pat != nullptr, "--pattern must be kimi, cl100k or o200k, got '{}'", o.pattern);
    t = std::make_shared<const tok::Tokenizer>(tok::BpeRanks::load(o.tokenizer), tok::SpecialTokens(), pat);
  }
  if (o.print_pattern) {
    std::printf("%s", t->pattern().c_str());
    return;
  }
  std::ifstream in(o.text, std::ios::binary);
  DS_CHECK(!o.text.empty() && in.good(), "cannot open --text '{}'", o.text);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  double best = 1e30;
  size_t n_tokens = 0;
  for (int r = 0; r < std::max(1, o.repeats); ++r) {
    const double t0 = cpu_now_s();
    n_tokens = t->encode(text, tok::SpecialMode::kPlainText).size();
    best = std::min(best, cpu_now_s() - t0);
  }
  std::printf(
      "{\"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.6f, \"mb_per_s\": %.3f, \"bytes_per_token\": "
      "%.3f}\n",
      text.size(), n_tokens, best, double(text.size()) / best / 1e6,
      double(text.size()) / double(std::max<size_t>(1, n_tokens)));
}

}  // namespace

void register_bench_tokenizer(CLI::App& bench) {
  auto o = std::make_shared<BenchTokenizerOptions>();
  auto* c = bench.add_subcommand("tokenizer", "BPE encoding speed on a text file (MB/s)");
  c->add_option("--tokenizer", o->tokenizer, "checkpoint folder or tiktoken.model file")->required();
  c->add_option("--pattern", o->pattern, "pre-tokenizer for a bare .model file: kimi|cl100k|o200k");
  c->add_option("--text", o->text, "UTF-8 text file to encode");
  c->add_flag("--print-pattern", o->print_pattern, "print the pre-tokenizer pattern and exit");
  c->add_option("--repeats", o->repeats, "runs; the fastest is reported");
  c->callback([o] { run(*o); });
}

}  // namespace ds::cli
