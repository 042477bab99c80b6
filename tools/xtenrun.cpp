// xtenrun: starts the ranks of a distributed job on this machine (docs/distributed.md
// "Launching"), as torchrun does.
//
//   xtenrun --nproc-per-node 2 ./build/examples/train --epochs 1
//   xtenrun --nnodes 2 --node-rank 0 --nproc-per-node 4 --master-addr 10.0.0.1 prog args...
//
// Each worker gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR and
// MASTER_PORT, and its share of the machine's cores: OMP_NUM_THREADS (unless set) and, when the
// cores divide evenly, a CPU affinity of its own cores. SIGINT, SIGTERM and SIGHUP are passed on
// to every worker. When a worker fails (a non-zero exit or a signal), xtenrun names it, stops
// the others (SIGTERM, then SIGKILL after a grace period) and exits with that worker's status
// (128 + the signal for a signal).
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t g_forward = 0;  // a signal to pass on to the workers
void on_signal(int sig) {
  g_forward = sig;
}

void usage() {
  std::fprintf(stderr,
               "usage: xtenrun [--nproc-per-node N] [--nnodes M --node-rank R] [--master-addr A]\n"
               "               [--master-port P (0: a free port, one node only)]\n"
               "               [--grace-seconds S] program [args...]\n");
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "xtenrun: %s\n", msg.c_str());
  std::exit(2);
}

int to_int(const char* flag, const char* v) {
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  if (!*v || *end) die(std::string(flag) + " takes an integer, got '" + v + "'");
  return static_cast<int>(r);
}

// A port no one listens on now (the kernel's pick).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    die(std::string("cannot find a free port: ") + std::strerror(errno));
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "stopped";
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = 1, nnodes = 1, node_rank = 0, port = 29500, grace = 10;
  std::string master_addr = "127.0.0.1";
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    }
    if (i + 1 >= argc) {
      usage();
      die(a + " needs a value");
    }
    const char* v = argv[++i];
    if (a == "--nproc-per-node" || a == "--nproc_per_node")
      nproc = to_int(a.c_str(), v);
    else if (a == "--nnodes")
      nnodes = to_int(a.c_str(), v);
    else if (a == "--node-rank" || a == "--node_rank")
      node_rank = to_int(a.c_str(), v);
    else if (a == "--master-addr" || a == "--master_addr")
      master_addr = v;
    else if (a == "--master-port" || a == "--master_port")
      port = to_int(a.c_str(), v);
    else if (a == "--grace-seconds")
      grace = to_int(a.c_str(), v);
    else {
      usage();
      die("unknown option " + a);
    }
  }
  if (i >= argc) {
    usage();
    die("no program to run");
  }
  if (nproc < 1) die("--nproc-per-node must be at least 1, got " + std::to_string(nproc));
  if (nnodes < 1) die("--nnodes must be at least 1, got " + std::to_string(nnodes));
  if (node_rank < 0 || node_rank >= nnodes)
    die("--node-rank must be in [0, " + std::to_string(nnodes) + "), got " +
        std::to_string(node_rank));
  if (port == 0) {
    if (nnodes != 1) die("--master-port 0 (a free port) works on one node only");
    port = free_port();
  }
  if (port < 1 || port > 65535)
    die("--master-port must be in [1, 65535], got " + std::to_string(port));

  // The cores this launcher may use, split between the local ranks.
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof(mine), &mine);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mine)) cores.push_back(c);
  const int per_rank = std::max<int>(1, static_cast<int>(cores.size()) / nproc);
  const bool pin = static_cast<int>(cores.size()) >= nproc && cores.size() % nproc == 0;
  const char* threads_env = std::getenv("OMP_NUM_THREADS");
  const bool threads_given = threads_env && *threads_env;

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  std::vector<pid_t> pids(nproc, -1);
  for (int local = 0; local < nproc; ++local) {
    const pid_t pid = fork();
    if (pid < 0) die(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      auto set = [](const char* k, const std::string& v) { setenv(k, v.c_str(), 1); };
      set("RANK", std::to_string(node_rank * nproc + local));
      set("LOCAL_RANK", std::to_string(local));
      set("WORLD_SIZE", std::to_string(nnodes * nproc));
      set("LOCAL_WORLD_SIZE", std::to_string(nproc));
      set("NODE_RANK", std::to_string(node_rank));
      set("MASTER_ADDR", master_addr);
      set("MASTER_PORT", std::to_string(port));
      if (!threads_given) set("OMP_NUM_THREADS", std::to_string(per_rank));
      if (pin) {
        cpu_set_t set_of;
        CPU_ZERO(&set_of);
        for (int k = 0; k < per_rank; ++k) CPU_SET(cores[local * per_rank + k], &set_of);
        sched_setaffinity(0, sizeof(set_of), &set_of);
      }
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "xtenrun: cannot run %s: %s\n", argv[i], std::strerror(errno));
      _exit(127);
    }
    pids[local] = pid;
  }

  int running = nproc, result = 0, forwarded = 0;
  bool stopping = false;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  auto signal_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(p, sig);
  };
  while (running > 0) {
    if (g_forward && g_forward != forwarded) {
      forwarded = g_forward;
      signal_all(forwarded);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      int local = 0;
      while (local < nproc && pids[local] != pid) ++local;
      if (local == nproc) continue;
      pids[local] = -1;
      --running;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !stopping) {
        std::fprintf(stderr, "xtenrun: rank %d (local rank %d, pid %d) %s; stopping the others\n",
                     node_rank * nproc + local, local, pid, describe(status).c_str());
        result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        stopping = true;
        signal_all(SIGTERM);
        stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace);
      }
      continue;
    }
    if (stopping && std::chrono::steady_clock::now() > stop_deadline) {
      std::fprintf(stderr, "xtenrun: %d worker(s) still running after %d s: SIGKILL\n", running,
                   grace);
      signal_all(SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!stopping && forwarded) result = 128 + forwarded;
  return result;
}
