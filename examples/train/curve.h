#pragma once
// The training curve of examples/train: one row per epoch, written as CSV and as an SVG with
// two panels (train loss, test accuracy). SVG is text, so no plotting library is needed.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

struct EpochRecord {
  int64_t epoch;
  double train_loss, test_accuracy, lr, images_per_s;
};

// "epoch,train_loss,test_accuracy,lr,images_per_s" rows, also kept in the checkpoint so that a
// resumed run writes the whole curve.
inline std::string to_csv(const std::vector<EpochRecord>& rows) {
  std::ostringstream s;
  s << "epoch,train_loss,test_accuracy,lr,images_per_s\n";
  for (const EpochRecord& r : rows)
    s << r.epoch << ',' << r.train_loss << ',' << r.test_accuracy << ',' << r.lr << ','
      << r.images_per_s << '\n';
  return s.str();
}

inline std::vector<EpochRecord> from_csv(const std::string& text) {
  std::vector<EpochRecord> rows;
  std::istringstream s(text);
  std::string line;
  std::getline(s, line);  // header
  while (std::getline(s, line)) {
    EpochRecord r{};
    char comma;
    std::istringstream f(line);
    if (f >> r.epoch >> comma >> r.train_loss >> comma >> r.test_accuracy >> comma >> r.lr >>
        comma >> r.images_per_s)
      rows.push_back(r);
  }
  return rows;
}

namespace curve_detail {
// One panel: a polyline of (epoch, value) in a w x h box at (x0, y0), with min/max labels.
inline void panel(std::ostream& svg, const std::vector<EpochRecord>& rows, double EpochRecord::*v,
                  const char* title, const char* color, int x0, int y0, int w, int h) {
  double lo = rows.front().*v, hi = lo;
  for (const EpochRecord& r : rows) lo = std::min(lo, r.*v), hi = std::max(hi, r.*v);
  if (hi - lo < 1e-9) hi = lo + 1;
  const double e0 = rows.front().epoch, e1 = std::max<double>(rows.back().epoch, e0 + 1);
  svg << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
      << "' fill='none' stroke='#999'/>\n";
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 - 8 << "' text-anchor='middle'>" << title
      << "</text>\n";
  svg << "<text x='" << x0 - 6 << "' y='" << y0 + 12 << "' text-anchor='end'>" << hi
      << "</text>\n";
  svg << "<text x='" << x0 - 6 << "' y='" << y0 + h << "' text-anchor='end'>" << lo
      << "</text>\n";
  svg << "<text x='" << x0 << "' y='" << y0 + h + 16 << "'>epoch " << e0 << "</text>\n";
  svg << "<text x='" << x0 + w << "' y='" << y0 + h + 16 << "' text-anchor='end'>" << e1
      << "</text>\n";
  svg << "<polyline fill='none' stroke='" << color << "' stroke-width='2' points='";
  for (const EpochRecord& r : rows) {
    const double x = x0 + (r.epoch - e0) / (e1 - e0) * w;
    const double y = y0 + h - (r.*v - lo) / (hi - lo) * h;
    svg << x << ',' << y << ' ';
  }
  svg << "'/>\n";
}
}  // namespace curve_detail

inline void write_svg(const std::string& path, const std::vector<EpochRecord>& rows) {
  if (rows.empty()) return;
  std::ofstream svg(path);
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='760' height='300' "
         "font-family='sans-serif' font-size='12'>\n";
  curve_detail::panel(svg, rows, &EpochRecord::train_loss, "train loss", "#c0392b", 70, 40, 280,
                      200);
  curve_detail::panel(svg, rows, &EpochRecord::test_accuracy, "test accuracy (%)", "#2471a3",
                      450, 40, 280, 200);
  svg << "</svg>\n";
}
