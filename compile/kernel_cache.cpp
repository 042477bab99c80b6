#include <xten/compile/kernel_cache.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace xten::compiler {
namespace {

namespace fs = std::filesystem;

// An entry: this magic, the payload's size and its FNV-1a hash (little endian), the payload.
constexpr char kMagic[8] = {'X', 'T', 'E', 'N', 'K', 'C', '0', '1'};

uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void put_u64(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string entry_path(const std::string& key) {
  return kernel_cache_dir() + "/" + key + ".bin";
}

}  // namespace

std::string kernel_cache_dir() {
  if (const char* d = std::getenv("XTEN_COMPILE_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return std::string(d) + "/xten/compile";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/xten/compile";
  return (fs::temp_directory_path() / "xten-compile-cache").string();
}

std::string hash_hex(const std::string& text) {
  return fmt::format("{:016x}",
                     fnv1a(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
}

std::string run_tool(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  const std::string tool = fs::path(argv[0]).filename().string();
  if (rc != 0) return fmt::format("cannot run {} ({})", argv[0], std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return fmt::format("waiting for {} failed ({})", tool, std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::ifstream log(log_path);
  std::string text, line;
  for (int i = 0; i < 6 && std::getline(log, line); ++i) text += (i ? " | " : "") + line;
  const std::string how = WIFEXITED(status)
                              ? fmt::format("exited with status {}", WEXITSTATUS(status))
                              : fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("{} {}{}{}", tool, how, text.empty() ? "" : ": ", text);
}

std::optional<Bytes> cache_load(const std::string& key, const std::string& what) {
  const std::string path = entry_path(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  const Bytes all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t head = sizeof(kMagic) + 16;
  std::string bad;
  if (all.size() < head || std::memcmp(all.data(), kMagic, sizeof(kMagic)) != 0)
    bad = "not a cache entry";
  else if (get_u64(all.data() + 8) != all.size() - head)
    bad = fmt::format("{} bytes of {}", all.size() - head, get_u64(all.data() + 8));
  else if (get_u64(all.data() + 16) != fnv1a(all.data() + head, all.size() - head))
    bad = "checksum mismatch";
  if (!bad.empty()) {
    std::fprintf(stderr,
                 "xten: compile: the cached %s %s is corrupt (%s); it is removed and built "
                 "again\n",
                 what.c_str(), path.c_str(), bad.c_str());
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  }
  return Bytes(all.begin() + static_cast<std::ptrdiff_t>(head), all.end());
}

void cache_store(const std::string& key, const Bytes& data) {
  static std::atomic<int> counter{0};
  const std::string dir = kernel_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  Bytes entry(kMagic, kMagic + sizeof(kMagic));
  put_u64(entry, data.size());
  put_u64(entry, fnv1a(data.data(), data.size()));
  entry.insert(entry.end(), data.begin(), data.end());
  const std::string tmp = fmt::format("{}/.{}.{}.{}.tmp", dir, key, getpid(), counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;
    f.write(reinterpret_cast<const char*>(entry.data()),
            static_cast<std::streamsize>(entry.size()));
    if (!f) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, entry_path(key), ec);  // whole or not at all
  if (ec) fs::remove(tmp, ec);
}

}  // namespace xten::compiler
