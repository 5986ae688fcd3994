// One step of the device forward as data: sequences of different lengths packed along T, each with
// its new tokens, where its state lives in the DevicePools (page table, live slot) and which
// checkpoint slots receive its KDA state. The ids are the cache's; the GpuExecutor translates a
// SchedulePlan into this.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runner/forward_batch.h"

namespace ds {

struct DeviceCheckpoint {
  int64_t position = 0;  // absolute token count after which the state is written, in (n_past, n_past + n]
  int32_t slot = -1;     // state slot of the DevicePools
};

struct DeviceSeqStep {
  std::span<const int32_t> tokens;  // I32 [n] new token ids (non-empty)
  int64_t n_past = 0;               // tokens already in the state (position of the first new one)
  std::span<const int32_t> pages;   // latent page ids covering positions [0, n_past + n)
  int32_t live_slot = -1;           // state slot advanced in place (all KDA layers); zero it for n_past == 0
  std::vector<DeviceCheckpoint> checkpoints;  // ascending positions
  LogitsWant logits = LogitsWant::Last;
  bool argmax_only = false;  // return the argmax of each of its logits rows (on the device), not the rows
};

struct DeviceStep {
  std::vector<DeviceSeqStep> seqs;
  bool capture_layer_outputs = false;  // copy the stream after every layer to the host (tests)
  bool allow_graph = true;  // a decode step may replay a recorded graph (DeviceModelOptions::decode_graphs)
};

struct DeviceForwardResult {
  std::vector<std::vector<float>> logits;  // per seq: f32 [rows, vocab] (0, 1 or n rows; none if argmax_only)
  std::vector<std::vector<int32_t>> tokens;       // per seq: argmax of each row (argmax_only; else empty)
  std::vector<std::vector<float>> layer_outputs;  // [n_layer] f32 [T, D] when captured
};

}  // namespace ds
