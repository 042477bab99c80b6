#pragma once
// The training curve of examples/train: one row per epoch (written as CSV) and the training
// loss per logged step, plotted as an SVG by examples/common/plot.h.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/plot.h"

struct EpochRecord {
  int64_t epoch;
  double train_loss, test_accuracy, lr, images_per_s, test_loss;
};

// "epoch,train_loss,test_accuracy,lr,images_per_s" rows, also kept in the checkpoint so that a
// resumed run writes the whole curve.
inline std::string to_csv(const std::vector<EpochRecord>& rows) {
  std::ostringstream s;
  s << "epoch,train_loss,test_accuracy,lr,images_per_s,test_loss\n";
  for (const EpochRecord& r : rows)
    s << r.epoch << ',' << r.train_loss << ',' << r.test_accuracy << ',' << r.lr << ','
      << r.images_per_s << ',' << r.test_loss << '\n';
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
        comma >> r.images_per_s >> comma >> r.test_loss)
      rows.push_back(r);
  }
  return rows;
}

// The loss per logged step ((fractional epoch, mean loss since the previous point)), kept in the
// checkpoint as "epoch,train_loss" rows beside the per-epoch curve.
using StepCurve = std::vector<std::pair<double, double>>;

inline std::string steps_to_csv(const StepCurve& steps) {
  std::ostringstream s;
  s << "epoch,train_loss\n";
  for (auto [e, l] : steps) s << e << ',' << l << '\n';
  return s.str();
}

inline StepCurve steps_from_csv(const std::string& text) {
  StepCurve steps;
  std::istringstream s(text);
  std::string line;
  std::getline(s, line);  // header
  while (std::getline(s, line)) {
    double e, l;
    char comma;
    std::istringstream f(line);
    if (f >> e >> comma >> l) steps.emplace_back(e, l);
  }
  return steps;
}

// Two panels (examples/common/plot.h): the training loss per logged step with the test loss of
// each epoch over it, and the test accuracy per epoch; the run's settings in the title.
inline void write_svg(const std::string& path, const std::string& title,
                      const std::vector<EpochRecord>& rows, const StepCurve& steps) {
  if (rows.empty() && steps.empty()) return;
  plot::Series test_loss{"test loss", "#2471a3", {}, true},
      accuracy{"test accuracy", "#2471a3", {}, false};
  for (const EpochRecord& r : rows) {
    test_loss.points.emplace_back(static_cast<double>(r.epoch), r.test_loss);
    accuracy.points.emplace_back(static_cast<double>(r.epoch), r.test_accuracy);
  }
  plot::write_svg(path, title,
                  {{"loss",
                    "epoch",
                    "cross-entropy",
                    {{"train (mean per logged step)", "#c0392b", steps, false}, test_loss}},
                   {"test accuracy", "epoch", "accuracy (%)", {accuracy}}});
}
