#pragma once
// Running a test program in a child process with a changed environment (test_xpu_exit.cpp,
// test_xpu_faults.cpp): the XPU runtime reads its settings once per process.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace xten::testing {

// Starts argv[0] with this process's environment, each "KEY=VALUE" of `env` replacing or adding
// its key, stdout and stderr to `out_path`. -1 if it could not start.
inline pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& out_path) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (const auto& set : env)
      replaced |= kv.compare(0, set.find('=') + 1, set, 0, set.find('=') + 1) == 0;
    if (!replaced) env_strings.push_back(kv);
  }
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argp[0], &fa, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ChildResult {
  int status = -1;  // waitpid's status
  std::string output;
  bool exited_0() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs the child to its end (no timeout: CTest's applies).
inline ChildResult run_child(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env, const std::string& out_path) {
  ChildResult r;
  const pid_t pid = spawn_child(argv, env, out_path);
  if (pid <= 0) {
    r.output = "could not start " + argv[0];
    return r;
  }
  while (waitpid(pid, &r.status, 0) < 0) {
  }
  r.output = read_text(out_path);
  return r;
}

}  // namespace xten::testing
