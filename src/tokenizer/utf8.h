// UTF-8 validation and repair. Ill-formed input is repaired the way a WHATWG / Unicode
// "maximal subpart" decoder does it (one U+FFFD per maximal ill-formed subpart), so that text
// repaired here equals what a JavaScript or Python decoder with replacement produces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds::tok {

// One step of decoding at the start of `s` (non-empty).
struct Utf8Unit {
  int n_bytes = 1;       // bytes consumed (1..4): the code point, or the ill-formed subpart
  char32_t cp = 0xFFFD;  // decoded code point; U+FFFD when !well_formed
  bool well_formed = false;
  bool truncated = false;  // ill-formed only because `s` ended inside a valid prefix
};
Utf8Unit utf8_decode_one(std::string_view s);

bool utf8_is_valid(std::string_view s);

// `s` with every maximal ill-formed subpart replaced by U+FFFD (EF BF BD).
std::string utf8_repair(std::string_view s);

// Length of the longest prefix of `s` that does not end inside a code point that later bytes
// could still complete; ill-formed bytes before that point count as complete (they become
// U+FFFD). A streaming decoder emits utf8_repair(s.substr(0, n)) and keeps the rest.
size_t utf8_complete_prefix(std::string_view s);

// Appends the UTF-8 encoding of `cp` (a scalar value; surrogates and > 0x10FFFF become U+FFFD).
void utf8_append(std::string& out, char32_t cp);

}  // namespace ds::tok
