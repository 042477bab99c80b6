#pragma once
// Line plots as SVG for the examples' training curves (examples/train, examples/gpt): panels of
// series (lines, or dots for evaluation points), axes with round tick values (steps of 1, 2 or 5
// times a power of ten) and light gridlines, a legend, and the run's settings in the title.
// SVG is text, so no plotting library is needed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace plot {

struct Series {
  std::string label, color;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool dots = false;                              // markers only (evaluation points)
};

struct Panel {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

namespace detail {

// Ticks of a round step covering [lo, hi]: about five of them.
struct Axis {
  double lo, hi, step;
  int decimals;
};

inline Axis axis(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  const double step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step, decimals};
}

inline std::string number(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

inline std::string escape(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '<' ? std::string("&lt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
  return out;
}

inline void panel(std::ostream& svg, const Panel& p, int x0, int y0, int w, int h) {
  double xlo = 1e300, xhi = -1e300, ylo = 1e300, yhi = -1e300;
  for (const Series& s : p.series)
    for (auto [x, y] : s.points) {
      xlo = std::min(xlo, x), xhi = std::max(xhi, x);
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  if (xlo > xhi) return;  // nothing to draw
  const Axis ax = axis(xlo, xhi), ay = axis(ylo, yhi);
  auto px = [&](double x) { return x0 + (x - ax.lo) / (ax.hi - ax.lo) * w; };
  auto py = [&](double y) { return y0 + h - (y - ay.lo) / (ay.hi - ay.lo) * h; };
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 - 10 << "' text-anchor='middle' "
      << "font-weight='bold'>" << escape(p.title) << "</text>\n";
  for (double x = ax.lo; x <= ax.hi + ax.step / 2; x += ax.step) {
    svg << "<line x1='" << px(x) << "' y1='" << y0 << "' x2='" << px(x) << "' y2='" << y0 + h
        << "' stroke='#e5e5e5'/>\n";
    svg << "<text x='" << px(x) << "' y='" << y0 + h + 16 << "' text-anchor='middle'>"
        << number(x, ax.decimals) << "</text>\n";
  }
  for (double y = ay.lo; y <= ay.hi + ay.step / 2; y += ay.step) {
    svg << "<line x1='" << x0 << "' y1='" << py(y) << "' x2='" << x0 + w << "' y2='" << py(y)
        << "' stroke='#e5e5e5'/>\n";
    svg << "<text x='" << x0 - 6 << "' y='" << py(y) + 4 << "' text-anchor='end'>"
        << number(y, ay.decimals) << "</text>\n";
  }
  svg << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h
      << "' fill='none' stroke='#888'/>\n";
  svg << "<text x='" << x0 + w / 2 << "' y='" << y0 + h + 36 << "' text-anchor='middle'>"
      << escape(p.x_label) << "</text>\n";
  svg << "<text transform='translate(" << x0 - 48 << ',' << y0 + h / 2
      << ") rotate(-90)' text-anchor='middle'>" << escape(p.y_label) << "</text>\n";
  int legend = 0;
  for (const Series& s : p.series) {
    if (s.dots) {
      for (auto [x, y] : s.points)
        svg << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='3.5' fill='" << s.color
            << "'/>\n";
    } else {
      svg << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5' points='";
      for (auto [x, y] : s.points) svg << px(x) << ',' << py(y) << ' ';
      svg << "'/>\n";
    }
    const int ly = y0 + 14 + 16 * legend++;
    svg << "<rect x='" << x0 + w - 200 << "' y='" << ly - 9 << "' width='12' height='10' fill='"
        << s.color << "'/>\n";
    svg << "<text x='" << x0 + w - 182 << "' y='" << ly << "'>" << escape(s.label) << "</text>\n";
  }
}

}  // namespace detail

// Panels side by side under one title line.
inline void write_svg(const std::string& path, const std::string& title,
                      const std::vector<Panel>& panels) {
  const int w = panels.size() == 1 ? 620 : 380, h = 260, left = 80, gap = 100, top = 70;
  const int width = std::max(left + static_cast<int>(panels.size()) * (w + gap) - gap + 30,
                             static_cast<int>(title.size()) * 7 + 40);
  std::ofstream svg(path);
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << top + h + 60
      << "' font-family='sans-serif' font-size='12'>\n";
  svg << "<rect width='100%' height='100%' fill='white'/>\n";
  svg << "<text x='" << width / 2 << "' y='22' text-anchor='middle' font-size='13'>"
      << detail::escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    detail::panel(svg, panels[i], left + static_cast<int>(i) * (w + gap), top, w, h);
  svg << "</svg>\n";
}

}  // namespace plot
