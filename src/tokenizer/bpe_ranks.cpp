#include "tokenizer/bpe_ranks.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "core/hash.h"

namespace ds::tok {

namespace {

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9e3779b97f4a7c15ULL * (s.size() + 1);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = splitmix64(h ^ w);
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = splitmix64(h ^ w);
  }
  return h;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(kB64[(v >> (6 * k)) & 63]);
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += {kB64[(v >> 18) & 63], kB64[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += {kB64[(v >> 18) & 63], kB64[(v >> 12) & 63], kB64[(v >> 6) & 63], '='};
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int n_pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++n_pad;
      } else {
        if (n_pad > 0) return std::nullopt;  // data after padding
        v[k] = b64_value(c);
        if (v[k] < 0) return std::nullopt;
      }
    }
    const uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(char(w >> 16));
    if (n_pad < 2) out.push_back(char((w >> 8) & 0xFF));
    if (n_pad < 1) out.push_back(char(w & 0xFF));
  }
  return out;
}

BpeRanks BpeRanks::parse(std::string_view text, std::string_view source) {
  std::vector<std::pair<std::string, uint32_t>> pairs;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    DS_CHECK(sp != std::string_view::npos && line.find(' ', sp + 1) == std::string_view::npos,
             "{}:{}: expected '<base64 token> <rank>', got '{}'", source, line_no, line.substr(0, 80));
    auto bytes = base64_decode(line.substr(0, sp));
    DS_CHECK(bytes && !bytes->empty(), "{}:{}: invalid base64 token '{}'", source, line_no,
             line.substr(0, std::min<size_t>(sp, 80)));
    const std::string_view rank_text = line.substr(sp + 1);
    uint64_t rank = 0;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    DS_CHECK(ec == std::errc() && end == rank_text.data() + rank_text.size() && rank <= kMaxRank,
             "{}:{}: invalid rank '{}' (an integer 0..{})", source, line_no, rank_text.substr(0, 40),
             kMaxRank);
    pairs.emplace_back(std::move(*bytes), uint32_t(rank));
  }
  return from_pairs(pairs, source);
}

BpeRanks BpeRanks::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DS_CHECK(in.good(), "cannot open tokenizer file {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

BpeRanks BpeRanks::from_pairs(const std::vector<std::pair<std::string, uint32_t>>& pairs,
                              std::string_view source) {
  DS_CHECK(!pairs.empty(), "{}: no tokens", source);
  uint32_t max_rank = 0;
  size_t total = 0;
  for (const auto& [bytes, rank] : pairs) {
    DS_CHECK(rank <= kMaxRank, "{}: rank {} above {}", source, rank, kMaxRank);
    DS_CHECK(!bytes.empty(), "{}: empty token at rank {}", source, rank);
    max_rank = std::max(max_rank, rank);
    total += bytes.size();
  }
  DS_CHECK(total < (1ull << 32), "{}: token bytes too large", source);
  BpeRanks r;
  r.offsets_.assign(size_t(max_rank) + 2, kHole);
  r.ends_.assign(size_t(max_rank) + 1, 0);
  std::vector<const std::string*> by_rank(size_t(max_rank) + 1, nullptr);
  for (const auto& [bytes, rank] : pairs) {
    DS_CHECK(by_rank[rank] == nullptr, "{}: rank {} appears twice", source, rank);
    by_rank[rank] = &bytes;
  }
  r.arena_.reserve(total);
  for (uint32_t k = 0; k <= max_rank; ++k) {
    if (!by_rank[k]) continue;
    r.offsets_[k] = r.arena_.size();
    r.arena_ += *by_rank[k];
    r.ends_[k] = uint32_t(r.arena_.size());
    ++r.n_tokens_;
  }
  r.offsets_[max_rank + 1] = r.arena_.size();
  r.build_index(source);
  return r;
}

void BpeRanks::build_index(std::string_view source) {
  size_t cap = 16;
  while (cap < n_tokens_ * 2) cap *= 2;
  slots_.assign(cap, kNone);
  const size_t mask = cap - 1;
  for (uint32_t k = 0; k < n_ids(); ++k) {
    if (!has_rank(k)) continue;
    const std::string_view b = bytes(k);
    for (size_t s = hash_bytes(b) & mask;; s = (s + 1) & mask) {
      if (slots_[s] == kNone) {
        slots_[s] = k;
        break;
      }
      DS_CHECK(bytes(slots_[s]) != b, "{}: token bytes of rank {} repeat rank {}", source, k, slots_[s]);
    }
  }
}

uint32_t BpeRanks::rank(std::string_view b) const {
  const size_t mask = slots_.size() - 1;
  for (size_t s = hash_bytes(b) & mask;; s = (s + 1) & mask) {
    const uint32_t k = slots_[s];
    if (k == kNone) return kNone;
    const uint64_t off = offsets_[k];
    if (ends_[k] - off == b.size() && std::memcmp(arena_.data() + off, b.data(), b.size()) == 0) return k;
  }
}

std::string_view BpeRanks::bytes(uint32_t rank) const {
  DS_DCHECK(has_rank(rank), "rank {} absent", rank);
  return std::string_view(arena_).substr(offsets_[rank], ends_[rank] - offsets_[rank]);
}

bool BpeRanks::has_all_bytes() const {
  for (int b = 0; b < 256; ++b) {
    const char c = char(b);
    if (rank(std::string_view(&c, 1)) == kNone) return false;
  }
  return true;
}

std::string BpeRanks::to_text() const {
  std::string out;
  for (uint32_t k = 0; k < n_ids(); ++k) {
    if (!has_rank(k)) continue;
    out += base64_encode(bytes(k));
    out += ' ';
    out += std::to_string(k);
    out += '\n';
  }
  return out;
}

}  // namespace ds::tok
