// Internal to src/kernels/cpu/isa: fills the KernelTable with this ISA's bodies (the last body
// header a kernels_<isa>.cpp includes).
#pragma once

namespace ds::cpu::DS_ISA {

inline KernelTable make_table(CpuIsa isa) {
  KernelTable t{};
  t.isa = isa;
  t.lanes = kLanes;
  t.kda_tile_cols = kKdaVecs * kLanes;
  t.gemv_bf16 = &gemv_bf16;
  t.gemv_f32 = &gemv_f32;
  t.bf16_to_f32 = &bf16_to_f32;
  t.gemm_nr = kGemmNr;
  t.gemm_scratch_floats = gemm_scratch_floats();
  t.gemm_bf16 = &gemm_bf16;
  t.gemm_f32 = &gemm_f32;
  t.small_gemm = &small_gemm;
  t.exp = &exp_array;
  t.silu = &silu_array;
  t.sigmoid = &sigmoid_array;
  t.silu_mul = &silu_mul;
  t.rmsnorm = &rmsnorm_rows;
  t.rmsnorm_gated_sigmoid = &rmsnorm_gated_sigmoid_rows;
  t.l2norm_rows = &l2norm_rows;
  t.conv_silu_row = &conv_silu_row;
  t.kda_recurrent_tile = &kda_recurrent_tile;
  t.kda_chunk_head = &kda_chunk_head;
  t.attend_block = &attend_block;
  t.latent_attend_head = &latent_attend_head;
  return t;
}

}  // namespace ds::cpu::DS_ISA
