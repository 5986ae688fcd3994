#include "tokenizer/utf8.h"

namespace ds::tok {

namespace {

// Allowed range of the second byte for a lead byte (Unicode Table 3-7); later bytes are 80..BF.
struct LeadInfo {
  int n_bytes;  // 0 = not a lead byte
  uint8_t lo, hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

Utf8Unit utf8_decode_one(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  const LeadInfo li = lead_info(b0);
  if (li.n_bytes == 1) return {1, b0, true, false};
  if (li.n_bytes == 0) return {1, 0xFFFD, false, false};
  char32_t cp = b0 & (0x7F >> li.n_bytes);
  for (int i = 1; i < li.n_bytes; ++i) {
    if (size_t(i) >= s.size()) return {i, 0xFFFD, false, true};
    const auto b = static_cast<uint8_t>(s[i]);
    const uint8_t lo = i == 1 ? li.lo : 0x80, hi = i == 1 ? li.hi : 0xBF;
    if (b < lo || b > hi) return {i, 0xFFFD, false, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {li.n_bytes, cp, true, false};
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Unit u = utf8_decode_one(s.substr(i));
    if (!u.well_formed) return false;
    i += u.n_bytes;
  }
  return true;
}

std::string utf8_repair(std::string_view s) {
  if (utf8_is_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const Utf8Unit u = utf8_decode_one(s.substr(i));
    if (u.well_formed)
      out.append(s.substr(i, u.n_bytes));
    else
      out.append("\xEF\xBF\xBD");
    i += u.n_bytes;
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // A unit only consumes continuation bytes after its lead, so every non-continuation byte
  // starts a unit; an unfinished unit is at most 3 bytes long and starts at the last such byte.
  const size_t stop = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t p = s.size(); p > stop; --p) {
    if ((static_cast<uint8_t>(s[p - 1]) & 0xC0) == 0x80) continue;
    return utf8_decode_one(s.substr(p - 1)).truncated ? p - 1 : s.size();
  }
  return s.size();
}

void utf8_append(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

}  // namespace ds::tok
