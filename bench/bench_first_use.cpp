// First-use cost of the XPU kernel families: the time to build each family's module (the
// SPIR-V embedded in libxten, built by the device's compiler on first use), cold (empty
// caches: the bundled driver's SPIR-V translation cache and PoCL's kernel cache) and warm
// (both caches filled by the cold run; the best of three, as this VM's timings are noisy).
// Each measurement runs in a fresh child process, since a process keeps its built modules.
// Goal: warm <= 10 ms per family.
//
//   bench_first_use            # all families
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <xten/kernels/xpu/runtime/runtime.h>
#include <xten/xten.h>

namespace {

// A family and one of its kernels (building the module is what costs; the lookup is a map).
struct Family {
  const char* family;
  const char* kernel;
};
const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"copy", "copy_f32_f16"},
      {"factory", "arange_int_i64"},
      {"binary", "add_f32"},
      {"unary", "exp_f32"},
      {"reduce", "reduce_sum_f32"},
      {"linalg", "bmm_f32"},
      {"activation", "softmax_f32"},
      {"conv", "im2col_f32"},
      {"pool", "max_pool2d_f32"},
      {"index", "gather_w4"},
      {"binary_int", "add_i32"},
      {"unary_int", "neg_i32"},
      {"reduce_int", "reduce_sum_i64"},
      {"binary_f64", "add_f64"},
      {"reduce_f64", "reduce_sum_f64"},
  };
  return f;
}

// In the child: milliseconds to build `family` on xpu:0 (device start-up excluded).
int child(const char* family, const char* kernel) {
  xten::xpu::get_device_properties(0);  // drivers, context, queues: not part of the cost
  const auto t0 = std::chrono::steady_clock::now();
  xten::xpu::get_kernel(0, "bench_first_use", family, kernel);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.3f\n", ms);
  return 0;
}

// Runs this program as a child for one family with the given cache directory; returns ms.
double measure(const char* self, const Family& f, const std::string& cache) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    setenv("ZE_OPENCL_CACHE_DIR", (cache + "/ze_opencl").c_str(), 1);
    setenv("POCL_CACHE_DIR", (cache + "/pocl").c_str(), 1);
    execl(self, self, "--child", f.family, f.kernel, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {0};
  const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::atof(buf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--child") return child(argv[2], argv[3]);
  if (xten::xpu::device_count() == 0) {
    std::fprintf(stderr, "bench_first_use: no XPU device\n");
    return 1;
  }
  std::printf("XPU device: %s\n\n", xten::xpu::get_device_properties(0).name.c_str());
  std::printf("%-12s %10s %10s   goal: warm <= 10 ms\n", "family", "cold ms", "warm ms");
  const std::string root =
      (std::filesystem::temp_directory_path() / ("xten_first_use_" + std::to_string(getpid())))
          .string();
  double worst_warm = 0;
  for (const Family& f : families()) {
    const std::string cache = root + "/" + f.family;
    const double cold = measure(argv[0], f, cache);
    double warm = measure(argv[0], f, cache);
    for (int i = 0; i < 2; ++i) warm = std::min(warm, measure(argv[0], f, cache));
    worst_warm = std::max(worst_warm, warm);
    std::printf("%-12s %10.1f %10.1f %s\n", f.family, cold, warm,
                warm < 0     ? "(failed)"
                : warm <= 10 ? ""
                             : "over the goal");
  }
  std::filesystem::remove_all(root);
  std::printf("\nworst warm build: %.1f ms (goal <= 10 ms)\n", worst_warm);
  return 0;
}
