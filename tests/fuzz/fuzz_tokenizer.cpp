// Fuzz target for the tokenizer. Byte 0 picks what the rest is:
//   0: a tiktoken.model file, 1: a tokenizer_config.json — parse: a ds::Error or a valid result;
//   otherwise text for the tiny golden tokenizer (Kimi pattern + specials): encoding in both
//   special-token modes must decode back to the repaired text, BPE must equal its reference on
//   every piece, and the streaming decoder must emit only valid UTF-8 adding up to the same text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/check.h"
#include "tokenizer/bpe.h"
#include "tokenizer/bpe_ranks.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"

namespace {

const ds::tok::Tokenizer& tiny() {
  static const std::shared_ptr<const ds::tok::Tokenizer> t =
      ds::tok::load_tokenizer_dir(DS_TEST_DATA_DIR "/golden/kimi-linear-tiny", 512).tokenizer;
  return *t;
}

void check_text(std::string_view text) {
  using namespace ds::tok;
  const Tokenizer& t = tiny();
  const std::string repaired = utf8_repair(text);
  for (SpecialMode mode : {SpecialMode::kPlainText, SpecialMode::kAllow}) {
    const auto ids = t.encode(text, mode);
    if (t.decode(ids) != repaired) __builtin_trap();
    StreamDecoder sd(t);
    std::string streamed;
    for (int32_t id : ids) {
      if (!t.valid_id(id)) __builtin_trap();
      const std::string piece = sd.push(id);
      if (!utf8_is_valid(piece)) __builtin_trap();
      streamed += piece;
    }
    streamed += sd.finish();
    if (streamed != repaired) __builtin_trap();
  }
  if (!repaired.empty() && repaired.size() < 512) {
    std::vector<int32_t> a, b;
    bpe_encode_piece(t.ranks(), repaired, a);
    bpe_encode_piece_ref(t.ranks(), repaired, b);
    if (a != b) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] == 0) {
      const ds::tok::BpeRanks r = ds::tok::BpeRanks::parse(rest, "fuzz.model");
      if (r.size() == 0 || r.size() > r.n_ids()) __builtin_trap();
      for (uint32_t k = 0; k < r.n_ids(); ++k)
        if (r.has_rank(k) && r.rank(r.bytes(k)) != k) __builtin_trap();
    } else if (data[0] == 1) {
      const auto c = ds::tok::parse_tokenizer_config(rest, "fuzz.json");
      (void)ds::tok::kimi_special_tokens(100, c, 0);
    } else {
      check_text(rest);
    }
  } catch (const ds::Error&) {
  }
  return 0;
}
