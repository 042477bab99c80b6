#pragma once
// The per-epoch progress line of examples/train: batches done/total, images/s, running loss and
// ETA, redrawn in place on a terminal and printed as a plain line every tenth of the epoch
// otherwise (logs, CI).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

class Progress {
 public:
  Progress(std::string label, int64_t total)
      : label_(std::move(label)), total_(total), tty_(isatty(fileno(stdout)) != 0),
        start_(std::chrono::steady_clock::now()) {}

  void update(int64_t done, int64_t images, double running_loss) {
    const double s = seconds();
    const double rate = s > 0 ? images / s : 0;
    const double eta = done > 0 ? s / done * (total_ - done) : 0;
    if (tty_) {
      constexpr int kWidth = 24;
      const int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
      std::printf("\r%s [%s%s] %lld/%lld  %7.0f img/s  loss %.4f  ETA %s ", label_.c_str(),
                  std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                  static_cast<long long>(done), static_cast<long long>(total_), rate,
                  running_loss, clock(eta).c_str());
      std::fflush(stdout);
    } else if (done == total_ || done % std::max<int64_t>(1, total_ / 10) == 0) {
      std::printf("%s %lld/%lld  %.0f img/s  loss %.4f  ETA %s\n", label_.c_str(),
                  static_cast<long long>(done), static_cast<long long>(total_), rate,
                  running_loss, clock(eta).c_str());
      std::fflush(stdout);
    }
  }

  // Ends the in-place line.
  void finish() {
    if (tty_) std::printf("\n");
  }

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  static std::string clock(double seconds) {
    const long s = static_cast<long>(seconds + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
  }

  std::string label_;
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};
