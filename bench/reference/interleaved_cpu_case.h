#pragma once
// One measurement of interleaved_cpu.cpp: a name, the work of one call (FLOPs, or bytes for a
// memory-bound op) and the call. Standard C++ only: both libraries' translation units include it.
#include <functional>
#include <string>
#include <vector>

struct CpuCase {
  std::string name;
  double work;  // per call: FLOPs, or bytes where `bytes`
  bool bytes;
  std::function<void()> call;
};
