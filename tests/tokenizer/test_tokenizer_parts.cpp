// Unit tests of the tokenizer's parts: UTF-8 repair and streaming prefix, base64 and the ranks
// file, BPE against its plain reference, special-token matching, Kimi's long-run splitting,
// decoding, the folder loader and its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/check.h"
#include "tokenizer/bpe.h"
#include "tokenizer/bpe_ranks.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_files.h"
#include "tokenizer/utf8.h"
#include "tokenizer_corpus.h"

namespace ds::tok {
namespace {

const std::string kTiny = DS_TEST_DATA_DIR "/golden/kimi-linear-tiny";

TEST(Utf8, RepairUsesMaximalSubparts) {
  EXPECT_EQ(utf8_repair("abc"), "abc");
  EXPECT_EQ(utf8_repair("\xff"), "\xEF\xBF\xBD");
  // E2 82 is a truncated 3-byte sequence: one U+FFFD, then 'x'.
  EXPECT_EQ(utf8_repair("\xe2\x82x"), "\xEF\xBF\xBDx");
  // ED A0 80 (a surrogate): ED then A0 is ill-formed: three U+FFFD.
  EXPECT_EQ(utf8_repair("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // C0 AF (overlong): two.
  EXPECT_EQ(utf8_repair("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(utf8_is_valid("日本 😀"));
  EXPECT_FALSE(utf8_is_valid("\xf4\x90\x80\x80"));
}

TEST(Utf8, CompletePrefixHoldsBackOnlyUnfinishedSequences) {
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xe2\x82"), 1u);      // could still become €
  EXPECT_EQ(utf8_complete_prefix("a\xf0\x9f\x98"), 1u);  // could still become 😀
  EXPECT_EQ(utf8_complete_prefix("a\xe2\x82\xac"), 4u);
  EXPECT_EQ(utf8_complete_prefix("a\xff"), 2u);   // never valid: emitted as U+FFFD
  EXPECT_EQ(utf8_complete_prefix("a\xe2x"), 3u);  // already broken by 'x'
  EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80\x80"), 4u);
}

TEST(Base64, RoundTripAndRejects) {
  std::mt19937 rng(3);
  for (int n = 0; n < 40; ++n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(char(rng()));
    auto d = base64_decode(base64_encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_FALSE(base64_decode("abc").has_value());
  EXPECT_FALSE(base64_decode("ab=c").has_value());
  EXPECT_FALSE(base64_decode("a*cd").has_value());
}

TEST(BpeRanksFile, ErrorsNameTheLine) {
  auto expect_error = [](const std::string& text, const std::string& part) {
    try {
      BpeRanks::parse(text, "t.model");
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error("YQ== 0\nYg== x\n", "t.model:2: invalid rank");
  expect_error("YQ== 0\n!!!! 1\n", "t.model:2: invalid base64");
  expect_error("YQ== 0\nYQ== 1\n", "repeat rank 0");
  expect_error("YQ== 0\nYg== 0\n", "rank 0 appears twice");
  expect_error("YQ==0\n", "t.model:1: expected");
  expect_error("", "no tokens");
  const BpeRanks r = BpeRanks::parse("YQ== 0\r\n\nYg== 1\n", "t.model");
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.rank("b"), 1u);
  EXPECT_EQ(r.rank("c"), BpeRanks::kNone);
  EXPECT_EQ(BpeRanks::parse(r.to_text(), "again").rank("a"), 0u);
}

TEST(Bpe, MatchesPlainReferenceOnTinyVocabulary) {
  const BpeRanks ranks = BpeRanks::load(kTiny + "/tiktoken.model");
  std::vector<std::string> pieces = testing::handwritten_corpus();
  for (auto& s : testing::random_corpus(300, 11)) pieces.push_back(std::move(s));
  for (const std::string& p : pieces) {
    if (p.empty()) continue;
    std::vector<int32_t> a, b;
    bpe_encode_piece(ranks, p, a);
    bpe_encode_piece_ref(ranks, p, b);
    ASSERT_EQ(a, b) << p;
    std::string back;
    for (int32_t id : a) back += ranks.bytes(uint32_t(id));
    EXPECT_EQ(back, p);
  }
}

TEST(Bpe, MissingByteIsAnError) {
  const BpeRanks ranks = BpeRanks::parse("YQ== 0\nYg== 1\n", "ab");
  std::vector<int32_t> out;
  EXPECT_THROW(bpe_encode_piece(ranks, "abc", out), Error);
  EXPECT_THROW(Tokenizer(BpeRanks::parse("YQ== 0\n", "a"), SpecialTokens(), kKimiPattern), Error);
}

TEST(SpecialTokensMatch, LeftmostThenLongest) {
  SpecialTokens s({{"<|a|>", 10}, {"<|a|><|b|>", 11}, {"[X]", 12}});
  auto m = s.find("xx<|a|><|b|>yy", 0);
  EXPECT_EQ(m.pos, 2u);
  EXPECT_EQ(m.len, 10u);
  EXPECT_EQ(m.id, 11);
  m = s.find("[X<|a|>", 0);
  EXPECT_EQ(m.pos, 2u);
  EXPECT_EQ(m.id, 10);
  EXPECT_EQ(s.find("nothing", 0).len, 0u);
  EXPECT_THROW(SpecialTokens({{"<|a|>", 1}, {"<|a|>", 2}}), Error);
  EXPECT_THROW(SpecialTokens({{"<|a|>", 1}, {"<|b|>", 1}}), Error);
}

TEST(TinyTokenizer, LoadsSpecialsWithinTheModelVocabulary) {
  const LoadedTokenizer lt = load_tokenizer_dir(kTiny, 512);
  const Tokenizer& t = *lt.tokenizer;
  EXPECT_EQ(t.n_vocab(), 512);
  EXPECT_EQ(t.special_id("[BOS]"), 500);
  EXPECT_EQ(t.special_id("<|im_end|>"), 502);
  EXPECT_EQ(t.special_id("<|tool_call_end|>"), 511);
  EXPECT_EQ(lt.config.eos_token, "[EOS]");
  // Without the model's limit, Kimi's 258 reserved ids extend past 512.
  EXPECT_EQ(load_tokenizer_dir(kTiny).tokenizer->n_vocab(), 500 + 258);
  EXPECT_THROW(load_tokenizer_dir(kTiny, 400), Error);
}

TEST(TinyTokenizer, SpecialTextIsPlainUnlessAllowed) {
  const auto t = load_tokenizer_dir(kTiny, 512).tokenizer;
  const std::string text = "hi<|im_end|>there";
  const auto allowed = t->encode(text, SpecialMode::kAllow);
  const auto plain = t->encode(text, SpecialMode::kPlainText);
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), 502), allowed.end());
  EXPECT_EQ(std::find(plain.begin(), plain.end(), 502), plain.end());
  for (int32_t id : plain) EXPECT_LT(id, 500);
  EXPECT_EQ(t->decode(allowed), text);
  EXPECT_EQ(t->decode(plain), text);
  EXPECT_EQ(t->decode(allowed, /*skip_special=*/true), "hithere");
  EXPECT_THROW(t->decode({512}), Error);
  EXPECT_THROW(t->decode({-1}), Error);
}

TEST(TinyTokenizer, RoundTripAndStreamingNeverSplitsACodePoint) {
  const auto t = load_tokenizer_dir(kTiny, 512).tokenizer;
  std::vector<std::string> corpus = testing::handwritten_corpus();
  for (auto& s : testing::random_corpus(200, 5)) corpus.push_back(std::move(s));
  for (const std::string& s : corpus) {
    const auto ids = t->encode(s);
    EXPECT_EQ(t->decode(ids), utf8_repair(s));
    StreamDecoder sd(*t);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = sd.push(id);
      EXPECT_TRUE(utf8_is_valid(piece)) << s;
      streamed += piece;
    }
    streamed += sd.finish();
    EXPECT_EQ(streamed, utf8_repair(s));
  }
  // A code point split over byte tokens: nothing is emitted until it is complete.
  StreamDecoder sd(*t);
  EXPECT_EQ(sd.push(0xE2), "");
  EXPECT_EQ(sd.push(0x82), "");
  EXPECT_EQ(sd.push(0xAC), "€");
  EXPECT_EQ(sd.push(0xE2), "");
  EXPECT_EQ(sd.finish(), "\xEF\xBF\xBD");
}

// Kimi's encode splits runs of more than 25,000 whitespace or non-whitespace code points; pieces
// never cross a split point.
TEST(TinyTokenizer, LongRunsAreSplit) {
  BpeRanks ranks = BpeRanks::load(kTiny + "/tiktoken.model");
  TokenizerOptions o;
  o.max_run_chars = 4;
  o.max_block_chars = 10;
  Tokenizer t(std::move(ranks), SpecialTokens(), kKimiPattern, o);
  Tokenizer plain(BpeRanks::load(kTiny + "/tiktoken.model"), SpecialTokens(), kKimiPattern);
  // "aaaaaa" = run of 6 > 4: encoded as "aaaa" + "aa".
  auto expect_concat = [&](const std::string& text, const std::vector<std::string>& parts) {
    std::vector<int32_t> want;
    for (const auto& p : parts) plain.encode(p, SpecialMode::kPlainText, want);
    EXPECT_EQ(t.encode(text), want) << text;
  };
  expect_concat("aaaaaa", {"aaaa", "aa"});
  expect_concat("ab  cdefgh", {"ab  cdef", "gh"});
  expect_concat("ab cd ef gh ij", {"ab cd ef g", "h ij"});  // 10-char blocks
  expect_concat("日本語日本語", {"日本語日", "本語"});
}

TEST(TokenizerConfigFile, Errors) {
  EXPECT_THROW(parse_tokenizer_config("{", "c.json"), Error);
  EXPECT_THROW(parse_tokenizer_config("[]", "c.json"), Error);
  EXPECT_THROW(parse_tokenizer_config(R"({"added_tokens_decoder": {"x": {"content": "a"}}})", "c.json"),
               Error);
  EXPECT_THROW(parse_tokenizer_config(R"({"added_tokens_decoder": {"5": {}}})", "c.json"), Error);
  EXPECT_THROW(parse_tokenizer_config(R"({"eos_token": 5})", "c.json"), Error);
  const auto c = parse_tokenizer_config(
      R"({"eos_token": {"content": "[EOS]"}, "chat_template": [{"name": "default", "template": "T"}]})",
      "c.json");
  EXPECT_EQ(c.eos_token, "[EOS]");
  EXPECT_EQ(c.chat_template, "T");
  EXPECT_THROW(load_tokenizer_dir("/nonexistent-dir"), Error);
}

}  // namespace
}  // namespace ds::tok
