#include "tokenizer/tokenizer_files.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"

namespace ds::tok {

namespace {

std::string token_text(const nlohmann::json& v, std::string_view source, std::string_view key) {
  if (v.is_null()) return {};
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  fail("{}: '{}' must be a string or an object with a string 'content'", source, key);
}

}  // namespace

TokenizerConfig parse_tokenizer_config(std::string_view json_text, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", source, e.what());
  }
  DS_CHECK(j.is_object(), "{}: expected a JSON object", source);
  TokenizerConfig c;
  c.present = true;
  if (j.contains("added_tokens_decoder")) {
    const auto& d = j["added_tokens_decoder"];
    DS_CHECK(d.is_object(), "{}: 'added_tokens_decoder' must be an object", source);
    for (const auto& [key, v] : d.items()) {
      int64_t id = -1;
      auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      DS_CHECK(ec == std::errc() && p == key.data() + key.size() && id >= 0 && id < (1 << 30),
               "{}: added_tokens_decoder key '{}' is not a token id", source, key);
      const std::string text = token_text(v, source, "added_tokens_decoder." + key);
      DS_CHECK(!text.empty(), "{}: added_tokens_decoder.{} has no content", source, key);
      c.added_tokens.push_back({text, int32_t(id)});
    }
  }
  if (j.contains("bos_token")) c.bos_token = token_text(j["bos_token"], source, "bos_token");
  if (j.contains("eos_token")) c.eos_token = token_text(j["eos_token"], source, "eos_token");
  if (j.contains("chat_template") && !j["chat_template"].is_null()) {
    const auto& t = j["chat_template"];
    if (t.is_string()) {
      c.chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const auto& e : t)
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
            e["template"].is_string())
          c.chat_template = e["template"].get<std::string>();
    } else {
      fail("{}: 'chat_template' must be a string or a list of named templates", source);
    }
  }
  return c;
}

std::vector<SpecialToken> kimi_special_tokens(uint32_t n_base, const TokenizerConfig& config,
                                              int32_t vocab_limit) {
  std::vector<SpecialToken> out;
  const int32_t limit = vocab_limit > 0 ? vocab_limit : INT32_MAX;
  for (const SpecialToken& t : config.added_tokens)
    DS_CHECK(t.id < limit, "added token '{}' has id {}, outside the model's vocabulary of {}", t.text, t.id,
             limit);
  const int32_t lo = int32_t(n_base), hi = lo + kKimiReservedSpecialTokens + 2;
  std::vector<std::string> names(size_t(hi - lo));
  for (const SpecialToken& t : config.added_tokens) {
    if (t.id >= lo && t.id < hi)
      names[size_t(t.id - lo)] = t.text;
    else
      DS_CHECK(t.id >= hi, "added token '{}' has id {}, inside the {} mergeable ranks", t.text, t.id, n_base);
  }
  for (int32_t id = lo; id < std::min(hi, limit); ++id) {
    std::string& n = names[size_t(id - lo)];
    out.push_back({n.empty() ? "<|reserved_token_" + std::to_string(id) + "|>" : n, id});
  }
  for (const SpecialToken& t : config.added_tokens)
    if (t.id >= hi) out.push_back(t);
  return out;
}

bool has_tokenizer_files(const std::string& dir) {
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / kTiktokenFile);
}

LoadedTokenizer load_tokenizer_dir(const std::string& dir, int32_t vocab_limit) {
  namespace fs = std::filesystem;
  const fs::path model = fs::path(dir) / kTiktokenFile;
  DS_CHECK(fs::is_regular_file(model), "{} has no {} (tokenizer file)", dir, kTiktokenFile);
  BpeRanks ranks = BpeRanks::load(model.string());
  LoadedTokenizer out;
  const fs::path cfg = fs::path(dir) / kTokenizerConfigFile;
  if (fs::is_regular_file(cfg)) {
    std::ifstream in(cfg, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    out.config = parse_tokenizer_config(ss.str(), cfg.string());
  }
  DS_CHECK(ranks.size() == ranks.n_ids(), "{}: ranks must be 0..{} without gaps", model.string(),
           ranks.size() - 1);
  DS_CHECK(vocab_limit <= 0 || ranks.size() <= size_t(vocab_limit),
           "{} has {} tokens, more than the model's vocabulary of {}", model.string(), ranks.size(),
           vocab_limit);
  SpecialTokens specials(kimi_special_tokens(uint32_t(ranks.size()), out.config, vocab_limit));
  TokenizerOptions opt;
  opt.max_block_chars = 400000;
  opt.max_run_chars = 25000;
  out.tokenizer = std::make_shared<const Tokenizer>(std::move(ranks), std::move(specials), kKimiPattern, opt);
  return out;
}

}  // namespace ds::tok
