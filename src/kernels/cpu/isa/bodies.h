// Internal to src/kernels/cpu/isa: every kernel body in dependency order, for one ISA. Included by
// kernels_<isa>.cpp inside its target region, after its vec_<isa>.h (see kernel_table.h).
#pragma once

#include "kernels/cpu/isa/vec_math.h"
//
#include "kernels/cpu/isa/elementwise_body.h"
//
#include "kernels/cpu/isa/linear_body.h"
//
#include "kernels/cpu/isa/gemm_body.h"
//
#include "kernels/cpu/isa/small_gemm_body.h"
//
#include "kernels/cpu/isa/kda_body.h"
//
#include "kernels/cpu/isa/attention_body.h"
//
#include "kernels/cpu/isa/table_body.h"
