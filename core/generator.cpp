#include <xten/core/generator.h>

#include <vector>

namespace xten {

Generator& default_cpu_generator() {
  static Generator g;
  return g;
}

namespace {
struct Hooks {
  std::mutex mutex;
  std::vector<std::function<void(uint64_t)>> hooks;
};
Hooks& hooks() {
  static Hooks h;
  return h;
}
}  // namespace

void register_manual_seed_hook(std::function<void(uint64_t)> hook) {
  std::lock_guard<std::mutex> lock(hooks().mutex);
  hooks().hooks.push_back(std::move(hook));
}

void manual_seed_all_generators(uint64_t seed) {
  default_cpu_generator().manual_seed(seed);
  std::lock_guard<std::mutex> lock(hooks().mutex);
  for (auto& h : hooks().hooks) h(seed);
}

}  // namespace xten
