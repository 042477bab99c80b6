#include <xten/core/parallel.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include <omp.h>

#include <xten/core/error.h>

namespace xten {
namespace {
std::atomic<int> g_num_threads{0};  // 0: not set, use omp's default
thread_local int tls_thread_limit = 0;  // 0: no limit on this thread

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
ThreadLimitGuard::~ThreadLimitGuard() { tls_thread_limit = saved_; }

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
  const int team = get_num_threads();
  const int64_t workers = std::min<int64_t>(team, (n + grain - 1) / grain);
  if (workers <= 1 || omp_in_parallel()) {
    f(0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(team)
  {
    const int64_t tid = omp_get_thread_num();
    // omp_get_num_threads() may be below `team` (OMP_DYNAMIC, thread limits): the workers
    // then share the threads that came.
    const int64_t nt = std::min<int64_t>(workers, omp_get_num_threads());
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = tid * chunk, end = std::min(n, begin + chunk);
    try {
      if (tid < nt && begin < end) f(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace xten
