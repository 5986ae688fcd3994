// Agreement with a real tiktoken: the npm `tiktoken` package (Rust core compiled to wasm, run
// with node) encodes the same corpus with the same ranks, pattern and special tokens; every id
// must be identical. The ranks come from the package's cl100k_base / o200k_base files converted
// to the tiktoken.model line format, which also exercises the loader.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/bpe_ranks.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_corpus.h"

namespace ds::tok {
namespace {

namespace fs = std::filesystem;

const std::string kNodeDir = DS_SOURCE_DIR "/tests/node";

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ds_tok_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void run_node(const std::string& args) {
  ASSERT_TRUE(fs::exists(kNodeDir + "/node_modules/tiktoken"))
      << "npm package tiktoken missing: run scripts/setup.sh (npm ci in tests/node)";
  const std::string cmd = "node " + kNodeDir + "/tiktoken_reference.cjs " + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string encoding;     // npm encoder file
  std::string pattern;      // "" = the encoding's own
  nlohmann::json specials;  // {} = the encoding's own
};

void check_agreement(const Case& c, const std::string& tag) {
  const fs::path dir = temp_dir(tag);
  fs::path model = dir / "tiktoken.model";
  if (c.encoding.ends_with(".model")) {
    model = c.encoding;
  } else {
    run_node("ranks " + c.encoding + " " + model.string());
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::vector<std::string> corpus = testing::handwritten_corpus();
  for (auto& s : testing::random_corpus(400, 7)) corpus.push_back(std::move(s));
  nlohmann::json cj = nlohmann::json::array();
  for (const auto& s : corpus)
    for (bool sp : {false, true}) cj.push_back({{"b64", base64_encode(s)}, {"special", sp}});
  std::ofstream(dir / "corpus.json") << cj.dump();
  std::ofstream(dir / "specials.json") << c.specials.dump();
  std::string pat = "-";
  if (!c.pattern.empty()) {
    std::ofstream(dir / "pattern.txt") << c.pattern;
    pat = (dir / "pattern.txt").string();
  }
  run_node("encode " + c.encoding + " " + pat + " " + (dir / "specials.json").string() + " " +
           (dir / "corpus.json").string() + " " + (dir / "ids.json").string());
  if (::testing::Test::HasFatalFailure()) return;
  const auto expected = nlohmann::json::parse(read_file(dir / "ids.json"));
  ASSERT_EQ(expected.size(), cj.size());

  std::vector<SpecialToken> specials;
  const nlohmann::json own =
      c.specials.empty()
          ? nlohmann::json(c.encoding == "cl100k_base"
                               ? nlohmann::json{{"<|endoftext|>", 100257},
                                                {"<|fim_prefix|>", 100258},
                                                {"<|fim_middle|>", 100259},
                                                {"<|fim_suffix|>", 100260},
                                                {"<|endofprompt|>", 100276}}
                               : nlohmann::json{{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}})
          : c.specials;
  for (const auto& [k, v] : own.items()) specials.push_back({k, v.get<int32_t>()});
  const std::string pattern =
      c.pattern.empty() ? (c.encoding == "cl100k_base" ? kCl100kPattern : kO200kPattern) : c.pattern;
  Tokenizer tok(BpeRanks::load(model.string()), SpecialTokens(specials), pattern);
  size_t n_tokens = 0, n_bad = 0;
  for (size_t i = 0; i < cj.size(); ++i) {
    const std::string text = corpus[i / 2];
    const bool sp = cj[i]["special"].get<bool>();
    const auto got = tok.encode(text, sp ? SpecialMode::kAllow : SpecialMode::kPlainText);
    const auto want = expected[i].get<std::vector<int32_t>>();
    n_tokens += want.size();
    if (got != want && ++n_bad <= 5)
      ADD_FAILURE() << tag << " case " << i / 2 << (sp ? " (specials)" : " (plain)") << ": '" << text
                    << "'\n  got  " << nlohmann::json(got).dump() << "\n  want "
                    << nlohmann::json(want).dump();
  }
  EXPECT_EQ(n_bad, 0u) << "of " << cj.size() << " encodings";
  EXPECT_GT(n_tokens, 10000u);  // the corpus is not trivially small
  fs::remove_all(dir);
}

TEST(TiktokenAgreement, Cl100k) {
  check_agreement({"cl100k_base", "", {}}, "cl100k");
}

TEST(TiktokenAgreement, O200k) {
  check_agreement({"o200k_base", "", {}}, "o200k");
}

// Kimi's pattern (Han runs, class intersections) and Kimi's chat special tokens on o200k's ranks:
// the npm encoder compiles the same pattern with fancy-regex, ours goes through ICU.
TEST(TiktokenAgreement, KimiPatternOnO200kRanks) {
  nlohmann::json specials = {{"[BOS]", 200100},
                             {"[EOS]", 200101},
                             {"<|im_end|>", 200102},
                             {"<|im_user|>", 200103},
                             {"<|im_assistant|>", 200104},
                             {"<|im_system|>", 200110},
                             {"<|im_middle|>", 200117},
                             {"<|endoftext|>", 199999}};
  check_agreement({"o200k_base", kKimiPattern, specials}, "kimi");
}

// The tiny vocabulary of the golden test checkpoints (500 ranks, mostly merges: BPE does real work
// on nearly every piece) with Kimi's pattern and its special tokens.
TEST(TiktokenAgreement, TinyGoldenVocabulary) {
  nlohmann::json specials = {{"[BOS]", 500},
                             {"[EOS]", 501},
                             {"<|im_end|>", 502},
                             {"<|im_user|>", 503},
                             {"<|im_assistant|>", 504},
                             {"<|im_system|>", 505},
                             {"<|im_middle|>", 506}};
  check_agreement({DS_TEST_DATA_DIR "/golden/kimi-linear-tiny/tiktoken.model", kKimiPattern, specials},
                  "tiny");
}

}  // namespace
}  // namespace ds::tok
