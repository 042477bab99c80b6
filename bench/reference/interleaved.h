#pragma once
// What interleaved_nn.cpp and interleaved_cpu.cpp share: xten and libtorch timed in one process,
// in blocks taken in turns (interleaved_nn.cpp says why). Standard C++ and POSIX only.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <unistd.h>

#include "block_timing.h"  // seconds_per_call, median

// The libtorch side of an interleaved program is a shared object beside it (the program's path
// plus ".libtorch.so", built by compare_interleaved.sh), loaded with RTLD_LOCAL: its symbols
// stay out of the global scope. Linked into one executable, symbols that libtorch exports took
// the place of Debian oneDNN's own for calls inside Debian's oneDNN, which xten runs:
// dnnl_sgemm answered "unimplemented" (xten then ran its other products) and a bfloat16
// matmul primitive failed to execute. libtorch's own lookups still reach the global scope, so
// both libraries run on one OpenMP runtime, Debian's libgomp (see restore_libtorch_threads).
inline void* libtorch_side() {
  static void* handle = [] {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string path = std::string(exe, n > 0 ? n : 0) + ".libtorch.so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "interleaved: cannot load %s: %s\n", path.c_str(), dlerror());
      std::exit(2);
    }
    return h;
  }();
  return handle;
}

// A function of the libtorch side, declared there extern "C".
template <class F>
F* libtorch_function(const char* name) {
  void* f = dlsym(libtorch_side(), name);
  if (!f) {
    std::fprintf(stderr, "interleaved: the libtorch side has no %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F*>(f);
}

// The thread counts given as arguments (1 without any); empty, after a message, when one is not
// positive.
inline std::vector<int> thread_counts(const char* program, int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1};
  for (int t : threads)
    if (t < 1) {
      std::fprintf(stderr, "%s: thread counts must be positive, got %d\n", program, t);
      return {};
    }
  return threads;
}

// libtorch's thread count, set again before each of its blocks: on the one OpenMP runtime,
// xten's oneDNN calls set the calling thread's count (Note [oneDNN threads]; 1 for a small
// product), and libtorch's parallel regions take theirs from it. Without this, a block of
// libtorch after an xten case that ended on a one-thread product ran on one thread.
inline int& libtorch_threads() {
  static int threads = 0;  // 0: the program sets libtorch's threads itself (interleaved_nn)
  return threads;
}
inline void restore_libtorch_threads() {
  if (libtorch_threads() > 0)
    libtorch_function<void(int)>("set_libtorch_threads")(libtorch_threads());
}

// `pairs` pairs of blocks of xten and libtorch, the pair's order alternating; each block
// returns its seconds per call. The pairs' ratios are libtorch's time over xten's.
struct Pairs {
  std::vector<double> xten, libtorch, ratios;
};
inline Pairs run_pairs(int pairs, const std::function<double()>& xten_block,
                       const std::function<double()>& libtorch_block) {
  Pairs out;
  for (int p = 0; p < pairs; ++p) {
    double x, l;
    if (p % 2 == 0) {
      x = xten_block();
      restore_libtorch_threads();
      l = libtorch_block();
    } else {
      restore_libtorch_threads();
      l = libtorch_block();
      x = xten_block();
    }
    out.xten.push_back(x);
    out.libtorch.push_back(l);
    out.ratios.push_back(l / x);
  }
  return out;
}

// `pairs` pairs of blocks of xten's call and libtorch's, each block one untimed call and then
// as many timed calls as take about `block_seconds` (judged from one call of each, at least
// one call).
inline Pairs pair_blocks(const std::function<void()>& xten_call,
                         const std::function<void()>& libtorch_call, double block_seconds,
                         int pairs) {
  const double xten_first = seconds_per_call(xten_call, 1);
  restore_libtorch_threads();
  const double first = std::max(xten_first, seconds_per_call(libtorch_call, 1));
  const int n = std::max(1, static_cast<int>(block_seconds / first));
  auto block = [n](const std::function<void()>& call) {
    call();
    return seconds_per_call(call, n);
  };
  return run_pairs(
      pairs, [&] { return block(xten_call); }, [&] { return block(libtorch_call); });
}

// "median M, lowest L, highest H" of the pairs' ratios.
inline void print_ratios(const Pairs& p) {
  std::printf("median %.2f, lowest %.2f, highest %.2f\n", median(p.ratios),
              *std::min_element(p.ratios.begin(), p.ratios.end()),
              *std::max_element(p.ratios.begin(), p.ratios.end()));
}

// The loop of interleaved_cpu.cpp and interleaved_layout.cpp over two lists of the same cases
// (../cpu_case.h; the header that includes this one includes that one first): for each thread
// count, `set_threads(t)`, both lists made, and per case one call of each library to warm up
// and size the blocks (about 30 ms of calls, at least one), then `pairs` pairs of blocks, each
// one untimed call and the timed ones. Prints both libraries' median figure and the median,
// lowest and highest of the pairs' ratios (xten's rate over libtorch's: above 1, xten is
// faster).
template <class Case>
void compare_case_lists(const std::vector<int>& threads, int pairs,
                        const std::function<void(int)>& set_threads,
                        const std::function<std::vector<Case>()>& xten_cases,
                        const std::function<std::vector<Case>()>& libtorch_cases) {
  for (int t : threads) {
    set_threads(t);
    const std::vector<Case> xs = xten_cases(), ls = libtorch_cases();
    for (size_t c = 0; c < xs.size() && c < ls.size(); ++c) {
      const Case &x = xs[c], &l = ls[c];
      const Pairs p = pair_blocks(x.call, l.call, 0.03, pairs);
      std::printf(
          "%-30s %2d threads: xten %s, libtorch %s; xten / libtorch per pair: ", x.name.c_str(), t,
          x.figure(median(p.xten) * 1e3).c_str(), l.figure(median(p.libtorch) * 1e3).c_str());
      print_ratios(p);
      std::fflush(stdout);
    }
  }
}
