// Safetensors reading: one mmapped file (8-byte LE header length + JSON header + data), and a
// WeightFiles that spans the shards of a folder (model.safetensors or the
// model.safetensors.index.json weight_map). Every header field, offset and shape is bounds-checked;
// dtypes other than the supported ones are rejected when a tensor is bound, naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/file_io.h"

namespace ds {

// A tensor inside a mapped file: non-owning view, valid while its SafetensorsFile lives.
struct TensorRef {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  // First byte of the tensor; null when opened header-only. Aligned only as the file places it:
  // read through memcpy or tensor_to_f32, never by casting to float*.
  const uint8_t* data = nullptr;
  size_t n_bytes = 0;  // == numel * dtype_size
  int64_t numel() const;
  std::string shape_str() const;  // "[3, 4]"
};

// Parsed header only (no mmap): the unit the fuzz target drives. `head_bytes` are the first bytes of
// the file (at least 8 + header length); `file_size` is the total file size, used to bound
// data_offsets. Checks: header length <= 100 MB and inside the file, known dtype names, shapes of
// non-negative dims, numel * dtype size == end - begin, every range inside the data area, no two
// ranges overlapping. Throws ds::Error naming `source` and the offending tensor / field.
struct SafetensorsHeader {
  size_t data_start = 0;                     // 8 + header length
  std::map<std::string, TensorRef> tensors;  // data pointers null here; offsets relative to data_start
  std::map<std::string, size_t> offset;      // tensor name -> byte offset from data_start
  std::map<std::string, std::string> metadata;
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same cap as the reference reader
  static uint64_t read_length(const uint8_t* first8);       // the u64 LE header length
  static SafetensorsHeader parse(std::span<const uint8_t> head_bytes, size_t file_size,
                                 const std::string& source);
};

// Where an opened file's bytes live. Mapped: the file is mmapped (page-cache pages, 4 KiB each).
// HugePageCopy: the file is read into anonymous memory advised for transparent huge pages (2 MiB):
// the CPU forward streams every weight once per token, and on 4 KiB pages a TLB miss every 4 KiB
// (and hardware prefetchers that stop at page boundaries) cap that stream well below the memory
// bandwidth. Costs one read of the file at load and its size in private memory.
enum class WeightMemory : uint8_t { Mapped, HugePageCopy };

class SafetensorsFile {
 public:
  static std::unique_ptr<SafetensorsFile> open(
      const std::string& path,
      WeightMemory memory = WeightMemory::Mapped);  // throws ds::Error
  // Reads and checks the header only (no mmap, data pointers null): for inventory checks of
  // checkpoints too large to map, e.g. sparse files in tests.
  static std::unique_ptr<SafetensorsFile> open_header(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorRef>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorRef* find(std::string_view name) const;  // nullptr if absent

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::map<std::string, TensorRef> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint folder. `prefix` (e.g. "language_model.") is stripped from names that
// carry it; tensors without it are kept under their full names.
class WeightFiles {
 public:
  // `dir` is a checkpoint folder or one .safetensors file. header_only: see SafetensorsFile::open_header.
  static WeightFiles open(const std::string& dir, const std::string& prefix = "", bool header_only = false,
                          WeightMemory memory = WeightMemory::Mapped);
  const TensorRef* find(std::string_view name) const;
  // Marks `name` used and returns it; throws naming the tensor if it is missing (shape unchecked).
  const TensorRef& require(std::string_view name) const;
  // Bound by name with shape check: throws naming the tensor and both shapes if missing/mis-shaped.
  const TensorRef& get(std::string_view name, const std::vector<int64_t>& expected_shape) const;
  std::vector<std::string> names() const;
  // Marks a tensor as used; unused_names() lists the rest (for the "extra tensor" check).
  std::vector<std::string> unused_names() const;
  // With a non-empty prefix: the names that did not carry it (e.g. a vision tower's tensors).
  bool is_unprefixed(std::string_view name) const { return unprefixed_.find(name) != unprefixed_.end(); }
  size_t size() const { return by_name_.size(); }

 private:
  struct Entry {
    const TensorRef* tensor = nullptr;
    mutable bool used = false;  // set by get()/require()
  };
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry, std::less<>> by_name_;  // name with the prefix stripped
  std::set<std::string, std::less<>> unprefixed_;
};

// Converts a BF16 / F16 / F32 tensor to f32 (out.size() == numel); throws naming the tensor otherwise.
void tensor_to_f32(const TensorRef& t, std::span<float> out);
std::vector<float> tensor_to_f32(const TensorRef& t);

// Writes tensors (F32 / I32 for `deltaserve logits`; any DType is accepted) to a safetensors file,
// data in the given order, header padded to 8 bytes. Atomic (core/file_io.h): the target is
// replaced only by a complete file; throws ds::Error naming the path and errno on I/O failure.
struct TensorToWrite {
  std::string name;
  DType dtype;  // F32 or I32
  std::vector<int64_t> shape;
  const void* data;
};
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors);
// The same into an AtomicFile opened earlier (before the work that produces the tensors); commits it.
void write_safetensors(AtomicFile& out, const std::vector<TensorToWrite>& tensors);

}  // namespace ds
