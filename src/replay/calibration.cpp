#include "replay/calibration.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "replay/replay.h"
#include "trace/trace.h"

namespace ds {
namespace {

using nlohmann::json;

const char* const kMetrics[] = {"ttft_p50_s", "tpot_p50_s", "total_tok_s_per_gpu"};
const char* const kFitMetrics[] = {"ttft_p50_s", "tpot_p50_s"};

struct FitParam {
  const char* name;
  double HardwareProfile::*member;
  double lo, hi;
};
constexpr FitParam kFitParams[] = {
    {"memory_efficiency", &HardwareProfile::memory_efficiency, 0.2, 1.0},
    {"gemm_efficiency", &HardwareProfile::gemm_efficiency, 0.1, 1.0},
    {"attention_efficiency", &HardwareProfile::attention_efficiency, 0.1, 1.0},
    {"comm_efficiency", &HardwareProfile::comm_efficiency, 0.1, 1.0},
    {"comm_latency_s", &HardwareProfile::comm_latency_s, 0.0, 1e-4},
    {"step_overhead_s", &HardwareProfile::step_overhead_s, 0.0, 0.01},
};

const FitParam& fit_param(const std::string& name, const std::string& src) {
  for (const FitParam& p : kFitParams)
    if (name == p.name) return p;
  fail(
      "{}: `fit` names unknown field `{}` (fittable: memory_efficiency, gemm_efficiency, "
      "attention_efficiency, comm_efficiency, comm_latency_s, step_overhead_s)",
      src, name);
}

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) fail("{}: missing key `{}`", where, key);
  return j.at(key);
}
std::string text(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_string()) fail("{}: `{}` must be a string, got {}", where, key, v.dump());
  return v.get<std::string>();
}
double number(const json& j, const char* key, const std::string& where) {
  const json& v = member(j, key, where);
  if (!v.is_number()) fail("{}: `{}` must be a number, got {}", where, key, v.dump());
  return v.get<double>();
}

ReplaySetup deployment_setup(const json& d, const std::string& where) {
  ReplaySetup s;
  s.model = text(d, "model", where);
  s.gpus = int(number(d, "gpus", where));
  s.dcp = int(number(d, "dcp", where));
  const std::string kv = text(d, "kv_dtype", where);
  DS_CHECK(kv == "fp8" || kv == "bf16", "{}: `kv_dtype` must be fp8 or bf16, got '{}'", where, kv);
  s.kv_dtype_bytes = kv == "fp8" ? 1 : 2;
  const std::string sched = text(d, "scheduler", where);
  DS_CHECK(sched == "mixed" || sched == "prefill-first",
           "{}: `scheduler` must be mixed or prefill-first, got '{}'", where, sched);
  s.mixed_batches = sched == "mixed";
  s.max_step_tokens = int64_t(number(d, "step_tokens", where));
  s.harness = "bench";
  // Cache-cold random prompts share nothing: no checkpoints to keep.
  s.variants = {CacheVariant{.label = "cold", .retention = "none", .eviction = "leaf-lru", .tiers = {"hbm"}}};
  return s;
}

double fit_loss(const CalibrationSet& set, const HardwareProfile& hw) {
  double loss = 0;
  for (const CalibrationResult& r : replay_calibration(set, hw)) {
    if (r.role != "fit") continue;
    for (const char* m : kFitMetrics) {
      const double e = std::log(r.predicted.at(m) / r.measured.at(m));
      loss += e * e;
    }
  }
  return loss;
}

}  // namespace

CalibrationSet load_calibration(const std::string& name_or_path) {
  const std::string path = resolve_profile("calibration", name_or_path);
  const json j = read_json_file(path);
  CalibrationSet set;
  set.name = text(j, "name", path);
  set.source = text(j, "source", path);
  set.hardware = text(j, "hardware", path);
  for (const json& f : member(j, "fit", path)) {
    DS_CHECK(f.is_string(), "{}: `fit` must list field names, got {}", path, f.dump());
    fit_param(f.get<std::string>(), path);
    set.fit_params.push_back(f.get<std::string>());
  }
  const json& deployments = member(j, "deployments", path);
  const json* specs = j.contains("speculative") ? &j.at("speculative") : nullptr;
  for (const json& p : member(j, "points", path)) {
    CalibrationPoint pt;
    pt.id = text(p, "id", path + ": point");
    const std::string where = path + ": point " + pt.id;
    pt.role = text(p, "role", where);
    DS_CHECK(pt.role == "fit" || pt.role == "held_out" || pt.role == "check",
             "{}: `role` must be fit, held_out or check, got '{}'", where, pt.role);
    const std::string dep = text(p, "deployment", where);
    pt.setup = deployment_setup(member(deployments, dep.c_str(), where + ": deployment"), where);
    pt.setup.hardware = set.hardware;
    const std::string fmt_name = text(p, "expert_format", where);
    DS_CHECK(fmt_name == "mxfp4" || fmt_name == "nvfp4",
             "{}: `expert_format` must be mxfp4 or nvfp4, got '{}'", where, fmt_name);
    pt.setup.routed_expert_bits = fmt_name == "mxfp4" ? 4.25 : 4.5;  // + E8M0 per 32 / FP8 per 16
    if (p.contains("speculative")) {
      const std::string name = text(p, "speculative", where);
      DS_CHECK(specs != nullptr && specs->contains(name), "{}: unknown speculative setting '{}'", where,
               name);
      const json& sp = specs->at(name);
      pt.setup.spec.draft_tokens = int(number(sp, "draft_tokens", where));
      pt.setup.spec.acceptance_length = number(sp, "acceptance_length", where);
      pt.setup.spec.draft_cost_fraction = number(sp, "draft_cost_fraction", where);
    }
    const int conc = int(number(p, "concurrency", where));
    const int64_t prompts = int64_t(number(p, "prompts", where));
    DS_CHECK(conc >= 1 && prompts >= conc, "{}: need concurrency >= 1 and prompts >= concurrency", where);
    pt.setup.concurrency = {conc};
    pt.trace = fmt::format("random:input=8192,output=1024,n={}", prompts);
    const json& meas = member(p, "measured", where);
    for (const char* m : kMetrics) {
      const double v = number(meas, m, where + ": measured");
      DS_CHECK(v > 0, "{}: measured `{}` must be positive, got {}", where, m, v);
      pt.measured[m] = v;
    }
    set.points.push_back(std::move(pt));
  }
  DS_CHECK(!set.points.empty(), "{}: no points", path);
  return set;
}

double CalibrationResult::error(const std::string& metric) const {
  return predicted.at(metric) / measured.at(metric) - 1.0;
}

std::vector<CalibrationResult> replay_calibration(const CalibrationSet& set, const HardwareProfile& hw) {
  std::vector<CalibrationResult> out;
  for (const CalibrationPoint& p : set.points) {
    const PreparedSweep sw = prepare_sweep(p.setup, hw);
    const RunMetrics m = run_replay(load_trace(p.trace), *sw.cost, sw.configs.at(0));
    CalibrationResult r{p.id, p.role, p.measured, {}};
    r.predicted["ttft_p50_s"] = m.ttft_p50_s;
    r.predicted["tpot_p50_s"] = m.tpot_p50_s;
    r.predicted["total_tok_s_per_gpu"] = m.total_tok_s_per_gpu;
    out.push_back(std::move(r));
  }
  return out;
}

CalibrationFit fit_calibration(const CalibrationSet& set, const HardwareProfile& start) {
  CalibrationFit fit{start, fit_loss(set, start), 1};
  constexpr double kGolden = 0.6180339887498949;
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (const std::string& name : set.fit_params) {
      const FitParam& p = fit_param(name, set.name);
      auto loss_at = [&](double v) {
        HardwareProfile hw = fit.hw;
        hw.*p.member = v;
        ++fit.evaluations;
        return fit_loss(set, hw);
      };
      double a = p.lo, b = p.hi;
      double c = b - kGolden * (b - a), d = a + kGolden * (b - a);
      double fc = loss_at(c), fd = loss_at(d);
      for (int it = 0; it < 24; ++it) {
        if (fc < fd) {
          b = d, d = c, fd = fc;
          c = b - kGolden * (b - a);
          fc = loss_at(c);
        } else {
          a = c, c = d, fc = fd;
          d = a + kGolden * (b - a);
          fd = loss_at(d);
        }
      }
      const double best = fc < fd ? c : d, best_loss = std::min(fc, fd);
      if (best_loss < fit.loss) {
        fit.hw.*p.member = best;
        fit.loss = best_loss;
      }
    }
  }
  return fit;
}

double calibration_field(const HardwareProfile& hw, const std::string& name) {
  return hw.*fit_param(name, "calibration").member;
}

std::string calibration_table(const std::vector<CalibrationResult>& results) {
  std::string out = fmt::format("{:<22} {:<9} {:<20} {:>12} {:>12} {:>8}\n", "point", "role", "metric",
                                "measured", "predicted", "error%");
  for (const CalibrationResult& r : results)
    for (const char* m : kMetrics)
      out += fmt::format("{:<22} {:<9} {:<20} {:>12.4g} {:>12.4g} {:>+8.1f}\n", r.id, r.role, m,
                         r.measured.at(m), r.predicted.at(m), 100 * r.error(m));
  out +=
      "(ttft/tpot: seconds, medians; total_tok_s_per_gpu: (input + output) tokens per second per GPU; "
      "fit: TTFT and TPOT were fitted, throughput never; held_out: predicted only)\n";
  return out;
}

std::string calibration_json(const std::vector<CalibrationResult>& results) {
  json doc;
  doc["points"] = json::array();
  for (const CalibrationResult& r : results) {
    json p{{"id", r.id}, {"role", r.role}};
    for (const char* m : kMetrics)
      p[m] = {{"measured", r.measured.at(m)}, {"predicted", r.predicted.at(m)}, {"error", r.error(m)}};
    doc["points"].push_back(p);
  }
  return doc.dump(2) + "\n";
}

}  // namespace ds
