#include <xten/core/parallel.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include <omp.h>

#include <xten/core/error.h>

namespace xten {
namespace {
std::atomic<int> g_num_threads{0};      // 0: not set, use omp's default
thread_local int tls_thread_limit = 0;  // 0: no limit on this thread
std::atomic<bool> g_owned_rows{true};   // Note [Rows to threads]

// The default when set_num_threads was not called: OpenMP's count at first use (the machine's
// cores, or OMP_NUM_THREADS). Read once: the oneDNN kernels call omp_set_num_threads to run
// small primitives on fewer threads (Note [oneDNN threads] in kernels/cpu/onednn.cpp), and
// reading omp_get_max_threads() again would let that lower every kernel after them.
int default_num_threads() {
  static const int n = omp_get_max_threads();
  return n;
}
}  // namespace

void set_num_threads(int n) {
  XTEN_CHECK(n > 0, ValueError, "set_num_threads",
             "the number of threads must be positive, but got {}", n);
  g_num_threads = n;
}

int get_num_threads() {
  const int set = g_num_threads.load();
  const int n = set > 0 ? set : default_num_threads();
  return tls_thread_limit > 0 ? std::min(n, tls_thread_limit) : n;
}

ThreadLimitGuard::ThreadLimitGuard(int n) : saved_(tls_thread_limit) {
  XTEN_CHECK(n > 0, ValueError, "ThreadLimitGuard",
             "the number of threads must be positive, but got {}", n);
  tls_thread_limit = n;
}
ThreadLimitGuard::~ThreadLimitGuard() {
  tls_thread_limit = saved_;
}

// Note [One OpenMP team]: every parallel region asks for the same number of threads,
// get_num_threads(), and threads beyond what a loop can use return at once. libgomp ends the
// pool's surplus threads when a region asks for fewer threads than the one before, and creates
// new ones when a later region asks for more: a step whose kernels asked for 3, 16, 5, 16
// threads created threads all the time (measured: alternating teams of 8 and 3 created 5,000
// threads in 2,000 regions, 110 us a region against 59 with one size). A team member that
// returns at once costs a wake-up and a barrier, far less. The oneDNN kernels follow the same
// rule (Note [oneDNN threads], kernels/cpu/onednn.cpp).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  const int64_t workers = std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain);
  if (workers <= 1 || omp_in_parallel()) {
    f(0, n);
    return;
  }
  parallel_on_team([&](int tid, int threads) {
    // The team may have fewer threads than asked for (OMP_DYNAMIC, thread limits): the
    // workers then share the threads that came.
    const int64_t nt = std::min<int64_t>(workers, threads);
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = tid * chunk, end = std::min(n, begin + chunk);
    if (tid < nt && begin < end) f(begin, end);
  });
}

// Note [Rows to threads]: in a training step at 16 threads, the threads of the optimizer's
// update write a weight's rows into their own caches, and the next step's product reads the
// weight with oneDNN's own split of the work: most rows then come from another core's cache.
// The MLP's 64 x 784 -> 256 product took 44-49 us alone and 70-95 us after an update on the
// 16-core host (an ad-hoc program: the update and product split the same way took 110-128 us
// for update, forward and weight-gradient products, against 154-174 us with oneDNN's split).
// So the kernels that cut a weight-sized matrix by rows use this one partition: the float32
// products whose largest operand is cut by its rows (kernels/cpu/onednn.cpp) and the
// optimizers' multi-tensor steps (kernels/cpu/optim.cpp). The same thread number is the same
// pool thread from region to region as long as the team size does not change (Note [One
// OpenMP team]).
RowRange owned_rows(int64_t rows, int t, int threads) {
  return {rows * t / threads, rows * (t + 1) / threads};
}

void set_owned_rows(bool on) {
  g_owned_rows = on;
}

bool owned_rows_enabled() {
  return g_owned_rows.load(std::memory_order_relaxed);
}

void parallel_on_team(const std::function<void(int, int)>& f) {
  const int team = get_num_threads();
  if (team <= 1 || omp_in_parallel()) {
    f(0, 1);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(team)
  {
    try {
      f(omp_get_thread_num(), omp_get_num_threads());
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace xten
