#include "tokenizer/tokenizer.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "core/check.h"
#include "tokenizer/bpe.h"
#include "tokenizer/utf8.h"

namespace ds::tok {

namespace {

// Python's str.isspace: general category Zs, or bidirectional class WS, B or S.
bool py_isspace(char32_t c) {
  if (u_charType(UChar32(c)) == U_SPACE_SEPARATOR) return true;
  const UCharDirection d = u_charDirection(UChar32(c));
  return d == U_WHITE_SPACE_NEUTRAL || d == U_BLOCK_SEPARATOR || d == U_SEGMENT_SEPARATOR;
}

// Kimi's block / run splitting, on code points of valid UTF-8. Calls fn(piece) in order.
template <typename Fn>
void split_long_runs(std::string_view text, const TokenizerOptions& o, Fn&& fn) {
  const size_t block = o.max_block_chars ? o.max_block_chars : SIZE_MAX;
  const size_t run = o.max_run_chars ? o.max_run_chars : SIZE_MAX;
  if (text.size() <= std::min(block, run)) {  // fewer code points than bytes: nothing to split
    fn(text);
    return;
  }
  size_t block_start = 0, n_chars_in_block = 0;
  size_t slice_start = 0, run_len = 0;
  bool run_is_space = false;
  for (size_t i = 0; i < text.size();) {
    if (n_chars_in_block == block) {  // new block: the run state restarts (as a fresh call does)
      if (i > slice_start) fn(text.substr(slice_start, i - slice_start));
      block_start = slice_start = i;
      n_chars_in_block = 0;
    }
    const Utf8Unit u = utf8_decode_one(text.substr(i));
    const bool sp = py_isspace(u.cp);
    if (i == block_start) {
      run_is_space = sp;
      run_len = 1;
    } else if (sp != run_is_space) {
      run_is_space = sp;
      run_len = 1;
    } else if (++run_len > run) {
      fn(text.substr(slice_start, i - slice_start));
      slice_start = i;
      run_len = 1;
    }
    ++n_chars_in_block;
    i += u.n_bytes;
  }
  if (text.size() > slice_start) fn(text.substr(slice_start));
}

}  // namespace

Tokenizer::Tokenizer(BpeRanks ranks, SpecialTokens specials, std::string_view pattern,
                     TokenizerOptions options)
    : ranks_(std::move(ranks)), specials_(std::move(specials)), pre_(pattern), options_(options) {
  DS_CHECK(ranks_.has_all_bytes(), "tokenizer vocabulary must contain all 256 single bytes");
  n_vocab_ = int32_t(ranks_.n_ids());
  for (const SpecialToken& s : specials_.all()) {
    DS_CHECK(!ranks_.has_rank(uint32_t(s.id)), "special token '{}' reuses id {} of an ordinary token", s.text,
             s.id);
    n_vocab_ = std::max(n_vocab_, s.id + 1);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, SpecialMode mode) const {
  std::vector<int32_t> out;
  encode(text, mode, out);
  return out;
}

void Tokenizer::encode(std::string_view text, SpecialMode mode, std::vector<int32_t>& out) const {
  out.reserve(out.size() + text.size() / 3 + 4);
  if (utf8_is_valid(text)) {
    split_long_runs(text, options_, [&](std::string_view b) { encode_block(b, mode, out); });
  } else {
    const std::string repaired = utf8_repair(text);
    split_long_runs(repaired, options_, [&](std::string_view b) { encode_block(b, mode, out); });
  }
}

void Tokenizer::encode_block(std::string_view text, SpecialMode mode, std::vector<int32_t>& out) const {
  if (mode == SpecialMode::kPlainText || specials_.empty()) {
    encode_ordinary(text, out);
    return;
  }
  for (size_t pos = 0;;) {
    const SpecialTokens::Match m = specials_.find(text, pos);
    if (m.pos > pos) encode_ordinary(text.substr(pos, m.pos - pos), out);
    if (m.len == 0) break;
    out.push_back(m.id);
    pos = m.pos + m.len;
  }
}

void Tokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  pre_.split(text, pieces);
  for (const auto& [b, e] : pieces) bpe_encode_piece(ranks_, text.substr(b, e - b), out);
}

bool Tokenizer::valid_id(int32_t id) const {
  return id >= 0 && (ranks_.has_rank(uint32_t(id)) || specials_.text(id) != nullptr);
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  if (id >= 0 && ranks_.has_rank(uint32_t(id))) return ranks_.bytes(uint32_t(id));
  const std::string* s = specials_.text(id);
  DS_CHECK(s != nullptr, "token id {} is not in the tokenizer's vocabulary (0..{})", id, n_vocab_ - 1);
  return *s;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (const int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    out += token_bytes(id);
  }
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  if (!(skip_special_ && tok_->is_special(id))) pending_ += tok_->token_bytes(id);
  const size_t n = utf8_complete_prefix(pending_);
  if (n == 0) return {};
  std::string out = utf8_repair(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = utf8_repair(pending_);
  pending_.clear();
  return out;
}

}  // namespace ds::tok
