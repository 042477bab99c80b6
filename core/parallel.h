#pragma once
// Intra-op parallelism for CPU kernels (OpenMP underneath).
#include <cstdint>
#include <functional>

namespace xten {

// The number of threads CPU kernels use; defaults to the machine's cores.
void set_num_threads(int n);
int get_num_threads();

// Limits the CPU kernels called on this thread to `n` threads for a scope (the DataLoader's
// workers run their small per-example ops on one thread each instead of each starting an
// OpenMP team beside the training loop's).
class ThreadLimitGuard {
 public:
  explicit ThreadLimitGuard(int n);
  ~ThreadLimitGuard();
  ThreadLimitGuard(const ThreadLimitGuard&) = delete;
  ThreadLimitGuard& operator=(const ThreadLimitGuard&) = delete;

 private:
  int saved_;
};

// Below this many elements of work a kernel runs on the calling thread.
constexpr int64_t kParallelGrain = 32768;

// The grain for a loop over items that each cost `work_per_item` elements of work, so that a
// thread gets at least kParallelGrain elements.
inline int64_t grain_for(int64_t work_per_item) {
  return work_per_item >= kParallelGrain ? 1
                                         : kParallelGrain / (work_per_item > 0 ? work_per_item : 1);
}

// Calls f(begin, end) on disjoint chunks covering [0, n), in parallel when n >= grain.
// An exception thrown by f is rethrown on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f);

// Note [Rows to threads] (core/parallel.cpp): kernels that cut a large matrix by its rows give
// thread t of a team of `threads` the rows owned_rows(rows, t, threads), so that the threads
// that wrote a weight, its gradient or its optimizer state find the same rows in their own
// caches when the next kernel reads them.
struct RowRange {
  int64_t begin, end;
};
RowRange owned_rows(int64_t rows, int t, int threads);

// Whether those kernels cut by owned_rows (the default) or as they would alone (oneDNN splits
// the products itself, the multi-tensor steps cut plain chunks): for the tests, which check
// that both agree, and for measuring what the partition saves. For the whole process.
void set_owned_rows(bool on);
bool owned_rows_enabled();

// Calls f(t, threads) once on each thread of a team of get_num_threads() (t = 0 the calling
// thread); f(0, 1) on the calling thread alone inside a parallel region or with one thread.
// An exception thrown by f is rethrown on the calling thread.
void parallel_on_team(const std::function<void(int, int)>& f);

}  // namespace xten
