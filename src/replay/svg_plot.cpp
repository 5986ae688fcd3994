#include "replay/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ds {
namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 60;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Range {
  double lo = 0, hi = 1;
};

// Data ranges over every series; degenerate ranges are widened so the mapping stays finite.
void data_ranges(const LineChart& c, Range& xr, Range& yr) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo;
  double ylo = xlo, yhi = -xlo;
  for (const auto& s : c.series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (c.x_log2 && x <= 0)) continue;
      double xv = c.x_log2 ? std::log2(x) : x;
      xlo = std::min(xlo, xv), xhi = std::max(xhi, xv);
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  }
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  if (c.y_from_zero) ylo = std::min(0.0, ylo);
  if (c.y_max > 0) yhi = c.y_max;
  if (xhi - xlo < 1e-12) xlo -= 0.5, xhi += 0.5;
  if (yhi - ylo < 1e-12) yhi = ylo + 1;
  xr = {xlo, xhi};
  yr = {ylo, yhi * (c.y_max > 0 ? 1.0 : 1.05)};
}

std::string tick_text(double v) {
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2)) return fmt::format("{:.1e}", v);
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

std::string axes(const LineChart& c, const Range& xr, const Range& yr) {
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  std::string out =
      fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
                  kLeft, kTop, pw, ph);
  for (int i = 0; i <= 5; ++i) {  // y ticks + grid
    double v = yr.lo + (yr.hi - yr.lo) * i / 5.0;
    double py = kTop + ph - ph * i / 5.0;
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        kLeft, py, kLeft + pw, py, kLeft - 6, py + 4, tick_text(v));
  }
  int n_x = c.x_log2 ? static_cast<int>(std::floor(xr.hi) - std::ceil(xr.lo)) + 1 : 6;
  for (int i = 0; i < std::max(n_x, 1); ++i) {  // x ticks
    double xv = c.x_log2 ? std::ceil(xr.lo) + i : xr.lo + (xr.hi - xr.lo) * i / 5.0;
    double px = kLeft + pw * (xv - xr.lo) / (xr.hi - xr.lo);
    double shown = c.x_log2 ? std::exp2(xv) : xv;
    out += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>"
        "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n",
        px, kTop, px, kTop + ph, px, kTop + ph + 16, tick_text(shown));
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"16\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {})\">{}</text>\n",
      kLeft + pw / 2, escape(c.title), kLeft + pw / 2, kHeight - 18, escape(c.x_label), kTop + ph / 2,
      kTop + ph / 2, escape(c.y_label));
  return out;
}

}  // namespace

std::string render_svg(const LineChart& c) {
  Range xr, yr;
  data_ranges(c, xr, yr);
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    double xv = c.x_log2 ? std::log2(x) : x;
    return kLeft + pw * (xv - xr.lo) / (xr.hi - xr.lo);
  };
  auto py = [&](double y) { return kTop + ph - ph * (y - yr.lo) / (yr.hi - yr.lo); };
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  out += axes(c, xr, yr);
  for (size_t si = 0; si < c.series.size(); ++si) {
    const auto& s = c.series[si];
    const char* color = kColors[si % std::size(kColors)];
    std::string pts;
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (c.x_log2 && x <= 0)) continue;
      pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    }
    out +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
    for (size_t pi = 0; pi < s.points.size(); ++pi) {
      auto [x, y] = s.points[pi];
      if (!std::isfinite(x) || !std::isfinite(y) || (c.x_log2 && x <= 0)) continue;
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>", px(x), py(y), color);
      if (pi < s.point_labels.size())
        out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" fill=\"{}\">{}</text>", px(x) + 5,
                           py(y) - 5, color, escape(s.point_labels[pi]));
      out += "\n";
    }
    double ly = kTop + 14 + 18.0 * si;
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n",
        kWidth - kRight + 12, ly, kWidth - kRight + 32, ly, color, kWidth - kRight + 38, ly + 4,
        escape(s.name));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace ds
