// The op sweep (../sweep_cases.h) through xten and libtorch in one process, in alternating
// blocks (interleaved_nn.cpp says why), at each thread count given: per case, one call of each
// to warm up and size the blocks (about 20 ms of calls, at least one), then kPairs pairs of
// blocks, the pair's order alternating. Prints, per thread count, a table sorted worst first:
// xten's and libtorch's median ms per call and the median of the pairs' ratios (libtorch's time
// over xten's: above 1, xten is faster), then the geometric mean of the ratios and the cases
// below 0.9. XTEN_SWEEP_ONLY=text runs only the cases whose name contains it (or one of its
// '|'-separated parts: XTEN_SWEEP_ONLY='tan|softplus'), and XTEN_SWEEP_SKIP=text skips those. Build
// and run: compare_interleaved.sh sweep [ROUNDS] [THREADS...].
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <xten/core/parallel.h>

#include "../sweep_xten.h"
#include "interleaved.h"

// interleaved_sweep_libtorch.cpp: the same cases in the same order.
void set_libtorch_threads(int threads) {
  libtorch_threads() = threads;
  restore_libtorch_threads();
}
std::vector<SweepCase> libtorch_sweep_cases() {
  return libtorch_function<std::vector<SweepCase>()>("libtorch_sweep_cases")();
}

constexpr int kPairs = 5;

// Whether `name` contains one of the '|'-separated parts of `parts`.
bool contains_any(const std::string& name, const std::string& parts) {
  for (size_t b = 0, e; b <= parts.size(); b = e + 1) {
    e = std::min(parts.find('|', b), parts.size());
    if (e > b && name.find(parts.substr(b, e - b)) != std::string::npos) return true;
  }
  return false;
}

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_sweep", argc, argv);
  if (threads.empty()) return 2;
  const char* only = std::getenv("XTEN_SWEEP_ONLY");
  const char* skip = std::getenv("XTEN_SWEEP_SKIP");
  for (int t : threads) {
    xten::set_num_threads(t);
    set_libtorch_threads(t);
    const std::vector<SweepCase> xs = xten_sweep_cases(), ls = libtorch_sweep_cases();
    if (xs.size() != ls.size()) {
      std::fprintf(stderr, "interleaved_sweep: %zu xten cases, %zu libtorch cases\n", xs.size(),
                   ls.size());
      return 2;
    }
    struct Row {
      std::string name;
      double xten_ms, libtorch_ms, ratio;
    };
    std::vector<Row> rows;
    for (size_t c = 0; c < xs.size(); ++c) {
      const SweepCase &x = xs[c], &l = ls[c];
      if ((only && !contains_any(x.name, only)) ||
          (skip && *skip && x.name.find(skip) != std::string::npos))
        continue;
      std::fprintf(stderr, "%s, %d threads\n", x.name.c_str(), t);  // progress; the table follows
      const Pairs p = pair_blocks(x.call, l.call, 0.02, kPairs);
      rows.push_back({x.name, median(p.xten) * 1e3, median(p.libtorch) * 1e3, median(p.ratios)});
    }
    std::sort(rows.begin(), rows.end(),
              [](const Row& a, const Row& b) { return a.ratio < b.ratio; });
    std::printf("\n%d threads: %zu cases, worst first (ratio: libtorch's time / xten's)\n", t,
                rows.size());
    std::printf("| case | xten ms | libtorch ms | ratio |\n| --- | --- | --- | --- |\n");
    double log_sum = 0;
    int below = 0;
    for (const Row& r : rows) {
      std::printf("| %s | %.3f | %.3f | %.2f |\n", r.name.c_str(), r.xten_ms, r.libtorch_ms,
                  r.ratio);
      log_sum += std::log(r.ratio);
      below += r.ratio < 0.9;
    }
    std::printf("%d threads: geometric mean %.2f, %d of %zu cases below 0.9\n", t,
                std::exp(log_sum / rows.size()), below, rows.size());
    std::fflush(stdout);
  }
}
