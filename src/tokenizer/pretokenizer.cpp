#include "tokenizer/pretokenizer.h"

#include <unicode/regex.h>
#include <unicode/unistr.h>
#include <unicode/utext.h>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace ds::tok {

const char* const kKimiPattern =
    R"([\p{Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*)"
    R"(|\s*[\r\n]+)"
    R"(|\s+(?!\S))"
    R"(|\s+)";

const char* const kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const char* const kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string icu_compatible_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      const char c = p[i + 1];
      if (c == 's')
        out += "\\p{White_Space}";
      else if (c == 'S')
        out += "\\P{White_Space}";
      else
        out.append(p.substr(i, 2));
      ++i;
    } else {
      out.push_back(p[i]);
    }
  }
  return out;
}

struct PreTokenizer::Impl {
  std::unique_ptr<icu::RegexPattern> regex;
};

PreTokenizer::PreTokenizer(std::string_view pattern) : pattern_(pattern), impl_(new Impl) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError pe{};
  const std::string icu = icu_compatible_pattern(pattern);
  impl_->regex.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(icu), 0, pe, status));
  DS_CHECK(U_SUCCESS(status) && impl_->regex, "invalid pre-tokenizer pattern (ICU: {} at offset {}): {}",
           u_errorName(status), pe.offset, std::string(pattern).substr(0, 200));
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::split(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  DS_CHECK(text.size() < (1ull << 31), "text of {} bytes is too long to pre-tokenize", text.size());
  // UTF-16 copy plus the UTF-8 offset of every UTF-16 unit (and of the end).
  std::u16string u16;
  std::vector<uint32_t> off8;
  u16.reserve(text.size());
  off8.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    const Utf8Unit u = utf8_decode_one(text.substr(i));
    DS_DCHECK(u.well_formed, "pre-tokenizer input must be valid UTF-8");
    if (u.cp < 0x10000) {
      u16.push_back(char16_t(u.cp));
      off8.push_back(uint32_t(i));
    } else {
      const char32_t v = u.cp - 0x10000;
      u16.push_back(char16_t(0xD800 + (v >> 10)));
      u16.push_back(char16_t(0xDC00 + (v & 0x3FF)));
      off8.push_back(uint32_t(i));
      off8.push_back(uint32_t(i));
    }
    i += u.n_bytes;
  }
  off8.push_back(uint32_t(text.size()));

  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(impl_->regex->matcher(status));
  DS_CHECK(U_SUCCESS(status), "ICU regex matcher: {}", u_errorName(status));
  UText* ut = utext_openUChars(nullptr, u16.data(), int64_t(u16.size()), &status);
  m->reset(ut);
  while (m->find(status) && U_SUCCESS(status)) {
    const int64_t b = m->start64(status), e = m->end64(status);
    if (e > b) pieces.emplace_back(off8[size_t(b)], off8[size_t(e)]);
  }
  utext_close(ut);
  DS_CHECK(U_SUCCESS(status), "ICU regex failed: {}", u_errorName(status));
}

}  // namespace ds::tok
