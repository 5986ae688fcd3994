// Safetensors reading: one mmapped file (8-byte LE header length + JSON header + data), and a
// Checkpoint that spans the shards of a folder (model.safetensors or the
// model.safetensors.index.json weight_map). Every header field, offset and shape is bounds-checked;
// dtypes other than the supported ones are rejected when a tensor is bound, naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace ds {

// A tensor inside a mapped file: non-owning view, valid while its SafetensorsFile lives.
struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // first byte of the tensor
  size_t n_bytes = 0;             // == numel * dtype_size
  int64_t numel() const;
  std::string shape_str() const;  // "[3, 4]"
};

// Parsed header only (no mmap): the unit the fuzz target drives. `file_size` is the total file
// size, used to bound data_offsets. Throws ds::Error naming `source` and the offending field.
struct SafetensorsHeader {
  size_t data_start = 0;  // 8 + header length
  std::map<std::string, TensorRef> tensors;  // data pointers null here; offsets relative to data_start
  std::map<std::string, size_t> offset;      // tensor name -> byte offset from data_start
  std::map<std::string, std::string> metadata;
  static SafetensorsHeader parse(std::span<const uint8_t> head_bytes, size_t file_size,
                                 const std::string& source);
};

class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);  // throws ds::Error
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorRef>& tensors() const { return tensors_; }
  const TensorRef* find(std::string_view name) const;  // nullptr if absent

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::map<std::string, TensorRef> tensors_;
};

// All tensors of a checkpoint folder. `prefix` (e.g. "language_model.") is stripped from names that
// carry it; tensors without it are kept under their full names.
class Checkpoint {
 public:
  static Checkpoint open(const std::string& dir, const std::string& prefix = "");
  const TensorRef* find(std::string_view name) const;
  // Bound by name with shape check: throws naming the tensor and both shapes if missing/mis-shaped.
  const TensorRef& get(std::string_view name, const std::vector<int64_t>& expected_shape) const;
  std::vector<std::string> names() const;
  // Marks a tensor as used; unused_names() lists the rest (for the "extra tensor" check).
  std::vector<std::string> unused_names() const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorRef*, std::less<>> by_name_;
  mutable std::map<std::string, bool, std::less<>> used_;
};

// Writes F32 / I32 tensors to a safetensors file (for `deltaserve logits`). Tensor data is
// written in the given order; throws ds::Error on I/O failure.
struct TensorToWrite {
  std::string name;
  DType dtype;  // F32 or I32
  std::vector<int64_t> shape;
  const void* data;
};
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);

}  // namespace ds
