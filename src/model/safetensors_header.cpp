// SafetensorsHeader::parse: a streaming (SAX) reader of the JSON header. No JSON tree is built:
// real K3 shards hold ~5,400 tensors each (~500k in all), and a tree costs ~10 allocations each.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "core/check.h"
#include "model/safetensors.h"

namespace ds {

namespace {

using nlohmann::json;

constexpr int64_t kMaxNumel = int64_t(1) << 50;  // far above any real tensor; keeps products finite

// One tensor entry while it is being read.
struct Entry {
  std::string name;
  std::optional<std::string> dtype;
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::vector<uint64_t>> offsets;
};

// SAX handler. Depth 1 = top object, 2 = a tensor entry or __metadata__, 3 = shape/data_offsets.
// Every violation throws ds::Error naming the source and the tensor.
class HeaderSax : public nlohmann::json_sax<json> {
 public:
  HeaderSax(const std::string& src, SafetensorsHeader& h, uint64_t data_bytes,
            std::vector<std::tuple<uint64_t, uint64_t, const std::string*>>& ranges)
      : src_(src), h_(h), data_bytes_(data_bytes), ranges_(ranges) {}

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) override {
    return number(v < 0 ? std::nullopt : std::optional(uint64_t(v)), std::to_string(v));
  }
  bool number_unsigned(number_unsigned_t v) override { return number(v, std::to_string(v)); }
  bool number_float(number_float_t, const string_t& s) override { return number(std::nullopt, s); }
  bool binary(binary_t&) override { return scalar("binary"); }

  bool string(string_t& s) override {
    if (skipping_scalar()) return true;
    if (state_ == State::Metadata) {
      h_.metadata[key_] = s;
      return true;
    }
    if (state_ == State::Entry && field_ == "dtype") {
      entry_.dtype = s;
      return true;
    }
    return scalar("a string");
  }

  bool start_object(std::size_t) override {
    if (skipping_open()) return true;
    switch (state_) {
      case State::Start:
        state_ = State::Top;
        return true;
      case State::Top:
        if (key_ == "__metadata__") {
          state_ = State::Metadata;
        } else {
          if (h_.tensors.count(key_)) fail("{}: tensor `{}` appears twice in the header", src_, key_);
          entry_ = Entry{key_, {}, {}, {}};
          state_ = State::Entry;
        }
        return true;
      default:
        return unexpected("an object");
    }
  }

  bool end_object() override {
    if (skipping_close()) return true;
    if (state_ == State::Metadata) {
      state_ = State::Top;
    } else if (state_ == State::Entry) {
      finish_entry();
      state_ = State::Top;
    } else {
      state_ = State::Done;
    }
    return true;
  }

  bool start_array(std::size_t) override {
    if (skipping_open()) return true;
    if (state_ == State::Entry && (field_ == "shape" || field_ == "data_offsets")) {
      state_ = field_ == "shape" ? State::Shape : State::Offsets;
      if (state_ == State::Shape) entry_.shape.emplace();
      if (state_ == State::Offsets) entry_.offsets.emplace();
      return true;
    }
    return unexpected("a list");
  }

  bool end_array() override {
    if (skipping_close()) return true;
    state_ = State::Entry;
    return true;
  }

  bool key(string_t& k) override {
    if (skip_ > 0) return true;
    if (state_ == State::Entry) {
      field_ = k;
      if (k != "dtype" && k != "shape" && k != "data_offsets") skip_next_ = true;  // unknown field: ignored
    } else {
      key_ = k;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    fail("{}: header is not valid JSON: {}", src_, e.what());
  }

 private:
  enum class State { Start, Top, Metadata, Entry, Shape, Offsets, Done };

  // The value of an ignored entry field (armed by key()) is consumed silently, children included.
  bool skipping_scalar() {
    if (skip_ > 0) return true;
    if (!skip_next_) return false;
    skip_next_ = false;
    return true;
  }
  bool skipping_open() {
    if (skip_ > 0) return ++skip_, true;
    if (!skip_next_) return false;
    skip_next_ = false;
    skip_ = 1;
    return true;
  }
  bool skipping_close() {
    if (skip_ == 0) return false;
    --skip_;
    return true;
  }

  bool scalar(const char* what) {
    if (skipping_scalar()) return true;
    return unexpected(what);
  }

  bool number(std::optional<uint64_t> v, const std::string& text) {
    if (skipping_scalar()) return true;
    if (state_ == State::Shape) {
      if (!v || *v > uint64_t(kMaxNumel))
        fail("{}: tensor `{}`: bad dimension {} in shape", src_, entry_.name, text);
      entry_.shape->push_back(int64_t(*v));
      return true;
    }
    if (state_ == State::Offsets) {
      if (!v)
        fail("{}: tensor `{}`: `data_offsets` must be two non-negative integers, got {}", src_, entry_.name,
             text);
      entry_.offsets->push_back(*v);
      return true;
    }
    return unexpected("a number");
  }

  [[noreturn]] bool unexpected(const char* what) {
    switch (state_) {
      case State::Start:
        fail("{}: header must be a JSON object, got {}", src_, what);
      case State::Top:
        if (key_ == "__metadata__") fail("{}: `__metadata__` must be an object, got {}", src_, what);
        fail("{}: tensor `{}`: entry must be an object, got {}", src_, key_, what);
      case State::Metadata:
        fail("{}: `__metadata__.{}` must be a string, got {}", src_, key_, what);
      case State::Entry:
        fail("{}: tensor `{}`: bad `{}`: got {}", src_, entry_.name, field_, what);
      case State::Shape:
        fail("{}: tensor `{}`: bad dimension ({}) in shape", src_, entry_.name, what);
      case State::Offsets:
        fail("{}: tensor `{}`: `data_offsets` must be two non-negative integers, got {}", src_, entry_.name,
             what);
      default:
        fail("{}: unexpected {} after the header object", src_, what);
    }
  }

  void finish_entry() {
    const std::string& name = entry_.name;
    if (!entry_.dtype) fail("{}: tensor `{}`: missing string `dtype`", src_, name);
    if (!entry_.shape) fail("{}: tensor `{}`: missing `shape`", src_, name);
    if (!entry_.offsets) fail("{}: tensor `{}`: missing `data_offsets`", src_, name);
    TensorRef t;
    t.name = name;
    if (!dtype_from_name(*entry_.dtype, &t.dtype))
      fail("{}: tensor `{}`: unsupported dtype \"{}\"", src_, name, *entry_.dtype);
    int64_t numel = 1;
    for (int64_t d : *entry_.shape) {
      if (d != 0 && numel > kMaxNumel / d) fail("{}: tensor `{}`: shape is too large", src_, name);
      numel *= d;
    }
    t.shape = std::move(*entry_.shape);
    const std::vector<uint64_t>& off = *entry_.offsets;
    if (off.size() != 2)
      fail("{}: tensor `{}`: `data_offsets` must be two non-negative integers, got {} values", src_, name,
           off.size());
    const uint64_t begin = off[0], end = off[1];
    if (begin > end) fail("{}: tensor `{}`: data_offsets [{}, {}] run backwards", src_, name, begin, end);
    const uint64_t expect = uint64_t(numel) * dtype_size(t.dtype);
    if (end - begin != expect)
      fail("{}: tensor `{}`: data_offsets [{}, {}] hold {} bytes, but {} {} needs {}", src_, name, begin, end,
           end - begin, *entry_.dtype, t.shape_str(), expect);
    if (end > data_bytes_)
      fail("{}: tensor `{}`: data_offsets [{}, {}] run past the {} data bytes of the file", src_, name, begin,
           end, data_bytes_);
    t.n_bytes = size_t(expect);
    h_.offset[name] = size_t(begin);
    auto it = h_.tensors.emplace(name, std::move(t)).first;
    ranges_.emplace_back(begin, end, &it->first);
  }

  const std::string& src_;
  SafetensorsHeader& h_;
  uint64_t data_bytes_;
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>>& ranges_;
  State state_ = State::Start;
  std::string key_;    // current key of the top object or of __metadata__
  std::string field_;  // current key inside a tensor entry
  Entry entry_;
  int skip_ = 0;            // > 0: inside an ignored container value, its depth
  bool skip_next_ = false;  // the next value belongs to an ignored entry field
};

}  // namespace

uint64_t SafetensorsHeader::read_length(const uint8_t* first8) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | first8[i];
  return v;
}

SafetensorsHeader SafetensorsHeader::parse(std::span<const uint8_t> head_bytes, size_t file_size,
                                           const std::string& source) {
  if (file_size < 8 || head_bytes.size() < 8)
    fail("{}: file is {} bytes, too short for the 8-byte header length", source, file_size);
  const uint64_t n = read_length(head_bytes.data());
  if (n > kMaxHeaderBytes) fail("{}: header length {} exceeds the {} byte limit", source, n, kMaxHeaderBytes);
  if (n > file_size - 8)
    fail("{}: header length {} runs past the end of the {} byte file", source, n, file_size);
  if (n > head_bytes.size() - 8)
    fail("{}: header length {} but only {} header bytes given", source, n, head_bytes.size() - 8);
  const char* text = reinterpret_cast<const char*>(head_bytes.data() + 8);

  SafetensorsHeader h;
  h.data_start = size_t(8 + n);
  std::vector<std::tuple<uint64_t, uint64_t, const std::string*>> ranges;
  HeaderSax sax(source, h, file_size - h.data_start, ranges);
  json::sax_parse(text, text + n, &sax);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    const auto& [b0, e0, n0] = ranges[i - 1];
    const auto& [b1, e1, n1] = ranges[i];
    if (b1 < e0)
      fail("{}: tensors `{}` [{}, {}] and `{}` [{}, {}] overlap", source, *n0, b0, e0, *n1, b1, e1);
  }
  return h;
}

}  // namespace ds
