// Computes test/cpu_levels.h's cases at the level XTEN_CPU_CAPABILITY sets (test_cpu_capability
// runs it once per level): reads the inputs from argv[1], writes each case's result (and scale)
// to argv[2], and prints the level it ran at.
#include <cstdio>

#include <xten/xten.h>

#include "cpu_levels.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cpu_level_child INPUTS OUTPUTS\n");
    return 2;
  }
  try {
    const xten::NamedTensorList in = xten::load(argv[1]);
    xten::NamedTensorList out;
    for (const auto& c : xten::testing::level_cases()) {
      out.emplace_back(c.name, c.fn(in).contiguous());
      if (c.scale) out.emplace_back(c.name + ".scale", c.scale(in).contiguous());
    }
    xten::save(out, argv[2]);
    std::printf("level %s\n%s\n", xten::to_string(xten::cpu_capability()),
                xten::cpu_backend_summary().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpu_level_child: %s\n", e.what());
    return 1;
  }
}
