#pragma once
// What the dispatcher needs from the profiler (docs/profiler.md): whether one is recording (one
// relaxed atomic load per call when none is), and the range an op call records when one is.
// The profiler itself is profiler/profiler.h.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <xten/core/tensor.h>

namespace xten {
class OperatorEntry;
enum class DispatchKey : uint8_t;

namespace profiler::detail {

extern std::atomic<bool> g_recording;
extern std::atomic<bool> g_record_shapes;
inline bool recording() {
  return g_recording.load(std::memory_order_relaxed);
}

// One recorded call: opened before the kernel runs, closed (and stored) after it, on the
// calling thread. `name` must outlive the profiler (an op's entry, a literal), or be copied by
// the string constructor.
class Range {
 public:
  Range(const OperatorEntry* op, DispatchKey key, std::vector<std::vector<int64_t>> shapes,
        std::vector<std::string> dtypes);
  explicit Range(std::string user_name);
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  void open();
  const OperatorEntry* op_ = nullptr;
  std::string user_name_;
  DispatchKey key_{};
  bool active_ = false;
  int64_t start_ns_ = 0;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> dtypes_;
};

// The shapes and dtypes of a call's tensor arguments (record_shapes).
struct InputShapes {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
  void add(const Tensor& t);
  template <class T>
  void add(const T&) {}
  void add(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) add(t);
  }
};
template <class... Args>
InputShapes input_shapes(const Args&... args) {
  InputShapes s;
  if (g_record_shapes.load(std::memory_order_relaxed)) (s.add(args), ...);
  return s;
}

}  // namespace profiler::detail
}  // namespace xten
