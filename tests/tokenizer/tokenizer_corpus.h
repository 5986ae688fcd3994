// A varied test corpus for tokenizer agreement tests: hand-written cases (code, CJK, emoji and
// ZWJ sequences, whitespace runs, contractions, digits, special-token text, ill-formed UTF-8)
// plus seeded random strings drawn from the same character families.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ds::tok::testing {

inline std::vector<std::string> handwritten_corpus() {
  return {
      "",
      "Hello WORLD's 你好世界 12345",
      "def f(x):\n    return x + 1\n\n\nclass A:\n\tpass  \n",
      "for (int i = 0; i < n; ++i) { sum += a[i] * 2.5e-3; }  // loop\r\n",
      "I'm sure they'll say it's fine; you've done what we'd do. DON'T SHOUT! He'S there'LL",
      "12345678901234567890 3.14159 1,000,000 ١٢٣ ٤٥٦ ⅫⅣ ²³",
      "    leading spaces and trailing    ",
      "\n\n\n   \n\t\t\n \r\n\r\n",
      "a\u00a0b\u2003c\u3000d"
      "\x0b"
      "e"
      "\xc2\x85"
      "f\u2028g\u2029h",
      "中文测试 English MIX café e\u0301 naïve Ω≈ç√∫",
      "日本語のテキストとカタカナ、ひらがな。한국어 텍스트도 있습니다.",
      "👋🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇩🇪🇯🇵 😀🌍𠀀",
      "Ελληνικά κείμενα και кириллица тоже: Привет, МИР!",
      "עברית ועربي: مرحبا بالعالم",
      "<|im_end|> <|im_user|>user<|im_middle|>hi<|im_end|><|endoftext|>",
      "<|not_a_token|> <| |> [EOS] [BOS]",
      "\\frac{1}{2} + \\alpha_{i} = \\sum_{k=0}^{n} x^k",
      "https://example.com/path?q=1&r=two#frag /usr/local/bin/ ../../x.cpp",
      "ALLCAPSWORD camelCaseWord PascalCase snake_case_word kebab-case-word",
      "!!!??? ... --- === *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]]",
      "tab\tseparated\tvalues\nand\tmore",
      std::string("nul\0byte and \x01\x02 controls", 27),
      "\xff\xfe invalid \xc3\x28 utf8 \xe2\x82 truncated \xf0\x9f\x98",
      "\xed\xa0\x80 surrogate \xc0\xaf overlong \xf4\x90\x80\x80 too big",
      "x\xe2\x82",
      "\xf0\x9f",
      "a  b   c    d     e",
      "   \n   x",
      "ǅungla ǈubljana Ǆ ǲ",
      "\u0301\u0301 marks alone \u0308a",
      "ﬁne ligatures ﬀ ﬃ and fullwidth ＡＢＣ１２３",
      "mixed中文English日本語123abc！？",
  };
}

// Random strings from families of code points (ASCII, Latin-1, Greek/Cyrillic, CJK, kana,
// Hangul, combining marks, emoji + ZWJ/VS16, whitespace kinds, digits of several scripts,
// punctuation) and occasionally raw bytes that are ill-formed UTF-8.
inline std::vector<std::string> random_corpus(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint32_t lo, uint32_t hi) { return uint32_t(lo + rng() % (hi - lo + 1)); };
  auto append = [](std::string& s, uint32_t cp) {
    if (cp < 0x80) {
      s.push_back(char(cp));
    } else if (cp < 0x800) {
      s += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      s += {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F))};
    } else {
      s += {char(0xF0 | (cp >> 18)), char(0x80 | ((cp >> 12) & 0x3F)), char(0x80 | ((cp >> 6) & 0x3F)),
            char(0x80 | (cp & 0x3F))};
    }
  };
  const std::vector<std::string> words = {
      "the", "The",     "THE",  "don't", "it's",       "we'll",       "I'M", "int", "return", "std::vector",
      "x1",  "foo_bar", "你好", "世界",  "<|im_end|>", "<|im_user|>", "'s",  "'t",  "'LL",    "ﬁ"};
  std::vector<std::string> out;
  for (int k = 0; k < n; ++k) {
    std::string s;
    const int len = int(rng() % 40);
    for (int i = 0; i < len; ++i) {
      switch (rng() % 16) {
        case 0:
        case 1:
        case 2:
          append(s, pick(0x20, 0x7E));
          break;
        case 3:
          s += words[rng() % words.size()];
          break;
        case 4:
          append(s, " \t\n\r\v\f"[rng() % 6]);
          break;
        case 5:
          append(s, pick(0xA0, 0xFF));
          break;
        case 6:
          append(s, rng() % 2 ? pick(0x391, 0x3C9) : pick(0x410, 0x44F));
          break;
        case 7:
          append(s, pick(0x4E00, 0x9FA5));
          break;
        case 8:
          append(s, rng() % 2 ? pick(0x3041, 0x3096) : pick(0xAC00, 0xD7A3));
          break;
        case 9:
          append(s, pick(0x300, 0x36F));
          break;
        case 10:
          append(s, pick(0x1F300, 0x1F64F));
          if (rng() % 2) append(s, 0x200D);
          if (rng() % 3 == 0) append(s, 0xFE0F);
          break;
        case 11:
          append(s, std::vector<uint32_t>{0x85, 0xA0, 0x1680, 0x2000, 0x2009, 0x200B, 0x2028, 0x202F, 0x3000,
                                          0xFEFF}[rng() % 10]);
          break;
        case 12:
          append(s, rng() % 2 ? pick('0', '9') : pick(0x660, 0x669));
          break;
        case 13:
          append(s, pick(0x2010, 0x2044));
          break;
        case 14:
          for (int r = int(rng() % 6); r >= 0; --r) s.push_back(' ');
          break;
        case 15:
          if (rng() % 4 == 0)
            s.push_back(char(pick(0x80, 0xFF)));
          else
            append(s, pick(0x20, 0x7E));
          break;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ds::tok::testing
