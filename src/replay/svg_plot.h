// LineChart: a minimal hand-written SVG line chart (axes, ticks, one polyline + markers per
// series, legend). Enough for the replay plots; no dependency. Coordinates are data units; the
// x axis may be log2 (concurrency sweeps).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ds {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y) in data units, drawn in order
  std::vector<std::string> point_labels;          // optional, one per point (e.g. "c=8")
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool x_log2 = false;      // x must be > 0 when set
  bool y_from_zero = true;  // y axis starts at 0 (else at the data minimum)
  double y_max = 0;         // fixed y maximum when > 0 (e.g. 1 for rates)
  std::vector<ChartSeries> series;
};

std::string render_svg(const LineChart& chart);  // a standalone <svg> document

}  // namespace ds
