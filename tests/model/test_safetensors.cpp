// Safetensors: write/read round trip, the fixtures' headers, every malformed header or index is a
// one-line error, sharded WeightFiles, prefix stripping and header-only opening; the huge-page copy
// holds the same bytes as the mapping.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "model_test_util.h"

namespace ds {
namespace {

using nlohmann::json;
using test::expect_error;
using test::golden_dir;
using test::raw_safetensors;
using test::TempDir;

SafetensorsHeader parse_text(const std::string& header, size_t data_bytes) {
  const std::string raw = raw_safetensors(header, data_bytes);
  return SafetensorsHeader::parse({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, raw.size(),
                                  "t.st");
}

TEST(Safetensors, WriteThenReadF32AndI32) {
  TempDir dir;
  const std::vector<float> logits{1.5f, -2.0f, 0.25f, 3.0f, 4.0f, -0.5f};
  const std::vector<int32_t> ids{7, -1, 163839};
  write_safetensors(dir.file("out.safetensors"),
                    {{"logits", DType::F32, {2, 3}, logits.data()}, {"ids", DType::I32, {3}, ids.data()}});
  auto f = SafetensorsFile::open(dir.file("out.safetensors"));
  ASSERT_EQ(f->tensors().size(), 2u);
  const TensorRef* l = f->find("logits");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->dtype, DType::F32);
  EXPECT_EQ(l->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(l->shape_str(), "[2, 3]");
  EXPECT_EQ(l->n_bytes, 24u);
  EXPECT_EQ(tensor_to_f32(*l), logits);
  const TensorRef* i = f->find("ids");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->dtype, DType::I32);
  std::vector<int32_t> back(3);
  std::memcpy(back.data(), i->data, 12);
  EXPECT_EQ(back, ids);
  EXPECT_EQ(f->find("nope"), nullptr);
  // Header padded so that the data area starts 8-byte aligned.
  const std::string raw = test::read_bytes(dir.file("out.safetensors"));
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.size(), 8 + n + 24 + 12);
}

TEST(Safetensors, OpensFixtureWithMetadataAndDtypes) {
  auto f = SafetensorsFile::open(golden_dir("kimi-linear-tiny") + "/model.safetensors");
  EXPECT_EQ(f->tensors().size(), 197u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  const TensorRef* a = f->find("model.layers.0.self_attn.A_log");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{1, 1, 2, 1}));
  const TensorRef* e = f->find("model.embed_tokens.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, DType::BF16);
  EXPECT_EQ(e->n_bytes, 512u * 256u * 2u);
  const std::vector<float> v = tensor_to_f32(*e);
  uint16_t h;
  std::memcpy(&h, e->data + 2 * 1000, 2);
  EXPECT_EQ(v[1000], bf16_to_f32(h));
  expect_error([&] { tensor_to_f32(*f->find("model.layers.0.self_attn.A_log"), std::span<float>()); },
               {"A_log", "2 elements"});
}

TEST(Safetensors, HugePageCopyHoldsTheSameBytes) {
  const std::string path = golden_dir("kimi-linear-tiny") + "/model.safetensors";
  auto mapped = SafetensorsFile::open(path);
  auto copied = SafetensorsFile::open(path, WeightMemory::HugePageCopy);
  ASSERT_EQ(copied->tensors().size(), mapped->tensors().size());
  for (const auto& [name, t] : mapped->tensors()) {
    const TensorRef* c = copied->find(name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_NE(c->data, t.data) << name;  // its own memory, not the mapping
    EXPECT_EQ(c->shape, t.shape) << name;
    ASSERT_EQ(c->n_bytes, t.n_bytes) << name;
    EXPECT_EQ(std::memcmp(c->data, t.data, t.n_bytes), 0) << name;
  }
}

TEST(Safetensors, ParsesHeaderFields) {
  const SafetensorsHeader h = parse_text(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[12,20]},)"
      R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"s":{"dtype":"F32","shape":[],"data_offsets":[20,24]}})",
      24);
  EXPECT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.offset.at("b"), 12u);
  EXPECT_EQ(h.tensors.at("s").numel(), 1);  // scalar
  EXPECT_GT(h.data_start, 8u);
  // Unknown entry fields (nested or scalar) are ignored; surrounding whitespace is fine.
  const SafetensorsHeader u = parse_text(
      R"( { "a" : {"x":{"y":[1,{"z":null}],"w":"s"},"dtype":"I32","q":7,"shape":[1],"data_offsets":[0,4],"r":[]} } )",
      4);
  EXPECT_EQ(u.tensors.at("a").dtype, DType::I32);
  EXPECT_EQ(u.tensors.at("a").shape, std::vector<int64_t>{1});
}

TEST(Safetensors, RejectsMalformedStructure) {
  expect_error(
      [] {
        parse_text(
            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            8);
      },
      {"`a` appears twice"});
  expect_error([] { parse_text(R"({"a":5})", 0); }, {"`a`", "entry must be an object", "a number"});
  expect_error([] { parse_text(R"({"__metadata__":[1]})", 0); }, {"`__metadata__` must be an object"});
  expect_error([] { parse_text(R"({"a":{"dtype":["F32"],"shape":[1],"data_offsets":[0,4]}})", 4); },
               {"`a`", "bad `dtype`"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4); },
               {"`a`", "bad dimension 1.5"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4); },
               {"`a`", "bad dimension"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", 4); },
               {"`a`", "data_offsets", "-4"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)", 4); },
               {"not valid JSON"});
  expect_error([] { parse_text(R"("text")", 0); }, {"JSON object", "a string"});
}

TEST(Safetensors, TruncatedFile) {
  TempDir dir;
  const std::string full = test::read_bytes(golden_dir("kimi-linear-tiny") + "/model.safetensors");
  test::write_bytes(dir.file("half.safetensors"), full.substr(0, full.size() / 2));
  expect_error([&] { SafetensorsFile::open(dir.file("half.safetensors")); },
               {"half.safetensors", "run past the", "data bytes"});
  test::write_bytes(dir.file("tiny.safetensors"), full.substr(0, 5));
  expect_error([&] { SafetensorsFile::open(dir.file("tiny.safetensors")); }, {"5 bytes", "too short"});
  test::write_bytes(dir.file("empty.safetensors"), "");
  expect_error([&] { SafetensorsFile::open(dir.file("empty.safetensors")); }, {"0 bytes"});
  test::write_bytes(dir.file("head.safetensors"), full.substr(0, 100));  // header cut mid-JSON
  expect_error([&] { SafetensorsFile::open(dir.file("head.safetensors")); },
               {"header length 22816", "runs past"});
}

TEST(Safetensors, HeaderLengthPastEof) {
  std::string raw = raw_safetensors(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  raw[0] = char(0xff);
  raw[1] = char(0x7f);  // 0x7fff bytes of header in a ~70 byte file
  expect_error(
      [&] {
        SafetensorsHeader::parse({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, raw.size(),
                                 "x.st");
      },
      {"x.st", "header length 32767", "runs past the end"});
  raw[7] = char(0x80);  // absurd length
  expect_error(
      [&] {
        SafetensorsHeader::parse({reinterpret_cast<const uint8_t*>(raw.data()), raw.size()}, raw.size(),
                                 "x.st");
      },
      {"exceeds"});
}

TEST(Safetensors, OverlappingOffsets) {
  expect_error(
      [] {
        parse_text(
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            12);
      },
      {"`a` [0, 8]", "`b` [4, 12]", "overlap"});
}

TEST(Safetensors, BadEntries) {
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8); },
               {"`a`", "hold 8 bytes", "F32 [3] needs 12"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", 8); },
               {"`a`", "unsupported dtype \"F64\""});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 2); },
               {"`a`", "run past"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4); },
               {"`a`", "bad dimension -1"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4); },
               {"`a`", "backwards"});
  expect_error([] { parse_text(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4); },
               {"`a`", "data_offsets"});
  expect_error([] { parse_text(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4); }, {"`a`", "dtype"});
  expect_error(
      [] {
        parse_text(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})", 4);
      },
      {"`a`"});
  expect_error([] { parse_text(R"({"__metadata__":{"k":3}})", 0); }, {"__metadata__.k"});
  expect_error([] { parse_text(R"({"a":)", 0); }, {"t.st", "not valid JSON"});
  expect_error([] { parse_text(R"([1,2])", 0); }, {"JSON object"});
}

// Writes a two-shard checkpoint: a, b in shard 1; c in shard 2, plus the index.
void write_sharded(const TempDir& dir, const json& weight_map) {
  const std::vector<float> v{1, 2, 3, 4};
  write_safetensors(dir.file("model-00001-of-00002.safetensors"),
                    {{"a", DType::F32, {2}, v.data()}, {"b", DType::F32, {2, 2}, v.data()}});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"c", DType::F32, {1}, v.data() + 3}});
  test::write_json(dir.file("model.safetensors.index.json"),
                   {{"metadata", {{"total_size", 28}}}, {"weight_map", weight_map}});
}

TEST(WeightFiles, ShardedIndex) {
  TempDir dir;
  write_sharded(dir, {{"a", "model-00001-of-00002.safetensors"},
                      {"b", "model-00001-of-00002.safetensors"},
                      {"c", "model-00002-of-00002.safetensors"}});
  const WeightFiles ck = WeightFiles::open(dir.path());
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(tensor_to_f32(ck.get("c", {1})), std::vector<float>{4});
  EXPECT_EQ(tensor_to_f32(ck.get("b", {2, 2})), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ck.unused_names(), std::vector<std::string>{"a"});
  expect_error([&] { ck.get("a", {3}); }, {"`a`", "shape [2]", "expected [3]"});
  expect_error([&] { ck.get("zz", {5, 6}); }, {"missing tensor `zz`", "[5, 6]"});
  expect_error([&] { ck.require("zz"); }, {"missing tensor `zz`"});
}

TEST(WeightFiles, BadIndex) {
  {
    TempDir dir;
    write_sharded(dir,
                  {{"a", "model-00001-of-00002.safetensors"}, {"c", "model-00001-of-00002.safetensors"}});
    expect_error([&] { WeightFiles::open(dir.path()); },
                 {"`c`", "absent from model-00001-of-00002.safetensors"});
  }
  {
    TempDir dir;
    write_sharded(dir, {{"a", "../model-00001-of-00002.safetensors"}});
    expect_error([&] { WeightFiles::open(dir.path()); }, {"not a plain file name"});
  }
  {
    TempDir dir;
    write_sharded(dir, {{"a", "model-00003-of-00002.safetensors"}});
    expect_error([&] { WeightFiles::open(dir.path()); }, {"model-00003-of-00002.safetensors"});
  }
  {
    TempDir dir;
    const std::vector<float> v{1, 2};
    write_sharded(dir,
                  {{"a", "model-00001-of-00002.safetensors"}, {"c", "model-00002-of-00002.safetensors"}});
    write_safetensors(dir.file("model-00002-of-00002.safetensors"),
                      {{"c", DType::F32, {1}, v.data()}, {"a", DType::F32, {1}, v.data()}});
    expect_error([&] { WeightFiles::open(dir.path()); }, {"`a` appears twice"});
  }
  {
    TempDir dir;
    expect_error([&] { WeightFiles::open(dir.path()); },
                 {"neither model.safetensors nor model.safetensors.index.json"});
    expect_error([&] { WeightFiles::open(dir.file("missing")); }, {"does not exist"});
  }
}

TEST(WeightFiles, PrefixStrippedAndHeaderOnly) {
  TempDir dir;
  const std::vector<float> v{1, 2, 3};
  write_safetensors(dir.file("model.safetensors"),
                    {{"language_model.model.norm.weight", DType::F32, {3}, v.data()},
                     {"vision_tower.w", DType::F32, {1}, v.data()}});
  const WeightFiles ck = WeightFiles::open(dir.path(), "language_model.");
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"model.norm.weight", "vision_tower.w"}));
  EXPECT_TRUE(ck.is_unprefixed("vision_tower.w"));
  EXPECT_FALSE(ck.is_unprefixed("model.norm.weight"));
  EXPECT_EQ(tensor_to_f32(ck.get("model.norm.weight", {3})), v);

  const WeightFiles hdr =
      WeightFiles::open(dir.file("model.safetensors"), "language_model.", /*header_only=*/true);
  const TensorRef& t = hdr.get("model.norm.weight", {3});
  EXPECT_EQ(t.data, nullptr);
  EXPECT_EQ(t.n_bytes, 12u);
  expect_error([&] { tensor_to_f32(t); }, {"header-only"});
}

}  // namespace
}  // namespace ds
