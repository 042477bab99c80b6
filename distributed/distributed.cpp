// init_process_group and the torch.distributed-style functions (docs/distributed.md).
#include <xten/distributed/distributed.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <fmt/ranges.h>

namespace xten::distributed {

namespace {

struct State {
  std::mutex mutex;
  std::shared_ptr<Store> store;
  std::shared_ptr<ProcessGroup> world;
  std::string address;  // the transport's local address
  int groups = 0;       // groups made so far (the next one's store prefix)
};
State& state() {
  static State s;
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int int_env(const char* name, const char* why) {
  const std::string v = env(name);
  XTEN_CHECK(!v.empty(), ValueError, "init_process_group", "{} is not set ({})", name, why);
  try {
    size_t used = 0;
    const int r = std::stoi(v, &used);
    if (used == v.size()) return r;
  } catch (const std::exception&) {
  }
  XTEN_FAIL(ValueError, "init_process_group", "{}='{}' is not an integer", name, v);
}

// The IPv4 address of network interface `name` (GLOO_SOCKET_IFNAME).
std::string interface_address(const std::string& name) {
  ifaddrs* list = nullptr;
  std::string found;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && name == a->ifa_name) {
        char buf[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf,
                    sizeof(buf));
        found = buf;
      }
    ::freeifaddrs(list);
  }
  XTEN_CHECK(!found.empty(), ValueError, "init_process_group",
             "GLOO_SOCKET_IFNAME names the interface '{}', which has no IPv4 address here", name);
  return found;
}

// The address of this machine's host name, or loopback when it has none.
std::string host_name_address() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "127.0.0.1";
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (::getaddrinfo(host, nullptr, &hints, &res) != 0 || !res) return "127.0.0.1";
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  ::freeaddrinfo(res);
  return buf;
}

const std::shared_ptr<ProcessGroup>& group_or_default(const Group& group, const char* op) {
  if (group) return group;
  XTEN_CHECK(state().world, ValueError, op,
             "the default process group is not initialized: call init_process_group first");
  return state().world;
}

// The group rank of job rank `r`.
int group_rank(const ProcessGroup& g, int r, const char* op, const char* what) {
  const auto& ranks = g.global_ranks();
  auto it = std::find(ranks.begin(), ranks.end(), r);
  XTEN_CHECK(it != ranks.end(), ValueError, op, "{} {} is not a member of the group (ranks {})",
             what, r, ranks);
  return static_cast<int>(it - ranks.begin());
}

WorkPtr finish(WorkPtr work, bool async_op) {
  if (!async_op) work->wait();
  return work;
}

}  // namespace

void init_process_group(const InitOptions& options) {
  const char* op = "init_process_group";
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  XTEN_CHECK(!s.world, ValueError, op,
             "the default process group is already initialized (destroy_process_group first)");
  XTEN_CHECK(options.backend == "gloo", NotImplementedError, op,
             "backend '{}' is not available: xten's distributed backend is 'gloo'",
             options.backend);
  XTEN_CHECK(options.timeout.count() > 0, ValueError, op, "timeout must be positive, got {} ms",
             options.timeout.count());
  int rank = options.rank, world_size = options.world_size;
  std::shared_ptr<Store> store = options.store;
  std::string address;
  const std::string& m = options.init_method;
  auto need_rank = [&]() {
    if (rank < 0) rank = int_env("RANK", "or pass rank");
    if (world_size < 0) world_size = int_env("WORLD_SIZE", "or pass world_size");
    XTEN_CHECK(world_size >= 1, ValueError, op, "world_size must be at least 1, but got {}",
               world_size);
    XTEN_CHECK(rank < world_size, ValueError, op, "rank must be in [0, {}), but got {}", world_size,
               rank);
  };
  if (!store) {
    std::string host;
    int port = 0;
    if (m == "env://") {
      need_rank();
      host = env("MASTER_ADDR");
      XTEN_CHECK(!host.empty(), ValueError, op, "MASTER_ADDR is not set (env:// needs it)");
      port = int_env("MASTER_PORT", "env:// needs it");
    } else if (m.rfind("tcp://", 0) == 0) {
      need_rank();
      const std::string hp = m.substr(6);
      const size_t colon = hp.rfind(':');
      XTEN_CHECK(colon != std::string::npos && colon > 0, ValueError, op,
                 "init_method '{}' is not tcp://host:port", m);
      host = hp.substr(0, colon);
      try {
        port = std::stoi(hp.substr(colon + 1));
      } catch (const std::exception&) {
        XTEN_FAIL(ValueError, op, "init_method '{}' has no port number", m);
      }
    } else if (m.rfind("file://", 0) == 0) {
      need_rank();
      XTEN_CHECK(m.size() > 7, ValueError, op, "init_method '{}' names no directory", m);
      store = std::make_shared<FileStore>(m.substr(7), options.timeout);
    } else {
      XTEN_FAIL(ValueError, op,
                "init_method '{}' is not one of env://, tcp://host:port, file:///path", m);
    }
    if (!store) {
      XTEN_CHECK(port > 0 && port < 65536, ValueError, op,
                 "the master port must be in [1, "
                 "65536), but got {}",
                 port);
      auto tcp = std::make_shared<TCPStore>(host, port, rank == 0, options.timeout);
      address = tcp->local_address();
      store = tcp;
    }
  } else {
    need_rank();
  }
  // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died would kill this process
  // with SIGPIPE instead of failing the collective. Ignored unless the program handles it
  // itself (Python ignores it for PyTorch the same way).
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
  if (!env("GLOO_SOCKET_IFNAME").empty())
    address = interface_address(env("GLOO_SOCKET_IFNAME"));
  else if (address.empty())
    address = host_name_address();
  s.world = std::make_shared<ProcessGroup>(std::make_shared<PrefixStore>("group0", store), rank,
                                           world_size, options.timeout, address);
  s.store = store;
  s.address = address;
  s.groups = 1;
}

void init_process_group(const std::string& backend, const std::string& init_method, int rank,
                        int world_size, Milliseconds timeout) {
  InitOptions o;
  o.backend = backend;
  o.init_method = init_method;
  o.rank = rank;
  o.world_size = world_size;
  o.timeout = timeout;
  init_process_group(o);
}

void destroy_process_group() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.world.reset();
  s.store.reset();
  s.groups = 0;
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().world != nullptr;
}

const std::shared_ptr<ProcessGroup>& default_group() {
  return group_or_default(nullptr, "default_group");
}

int get_rank(const Group& group) {
  return group_or_default(group, "get_rank")->rank();
}
int get_world_size(const Group& group) {
  return group_or_default(group, "get_world_size")->size();
}

std::shared_ptr<ProcessGroup> new_group(std::vector<int> ranks, Milliseconds timeout) {
  const char* op = "new_group";
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  XTEN_CHECK(s.world, ValueError, op,
             "the default process group is not initialized: call init_process_group first");
  const int world = s.world->size();
  if (ranks.empty())
    for (int r = 0; r < world; ++r) ranks.push_back(r);
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    XTEN_CHECK(ranks[i] >= 0 && ranks[i] < world, ValueError, op,
               "ranks must be in [0, {}), but got {}", world, ranks[i]);
    XTEN_CHECK(i == 0 || ranks[i] != ranks[i - 1], ValueError, op, "rank {} is listed twice",
               ranks[i]);
  }
  const int id = s.groups++;
  const int me = s.world->rank();
  auto it = std::find(ranks.begin(), ranks.end(), me);
  if (it == ranks.end()) return nullptr;
  if (timeout.count() < 0) timeout = s.world->timeout();
  return std::make_shared<ProcessGroup>(
      std::make_shared<PrefixStore>(fmt::format("group{}", id), s.store),
      static_cast<int>(it - ranks.begin()), static_cast<int>(ranks.size()), timeout, s.address,
      ranks);
}

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, const Group& group, bool async_op) {
  return finish(group_or_default(group, "all_reduce")->allreduce(tensor, op), async_op);
}

WorkPtr broadcast(Tensor& tensor, int src, const Group& group, bool async_op) {
  const auto& g = group_or_default(group, "broadcast");
  return finish(g->broadcast(tensor, group_rank(*g, src, "broadcast", "src")), async_op);
}

WorkPtr reduce(Tensor& tensor, int dst, ReduceOp op, const Group& group, bool async_op) {
  const auto& g = group_or_default(group, "reduce");
  return finish(g->reduce(tensor, group_rank(*g, dst, "reduce", "dst"), op), async_op);
}

WorkPtr all_gather(std::vector<Tensor>& tensor_list, const Tensor& tensor, const Group& group,
                   bool async_op) {
  return finish(group_or_default(group, "all_gather")->allgather(tensor_list, tensor), async_op);
}

WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, const Group& group,
                               bool async_op) {
  return finish(
      group_or_default(group, "all_gather_into_tensor")->allgather_into_tensor(output, input),
      async_op);
}

WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op, const Group& group,
                              bool async_op) {
  return finish(
      group_or_default(group, "reduce_scatter_tensor")->reduce_scatter_tensor(output, input, op),
      async_op);
}

WorkPtr gather(const Tensor& tensor, std::vector<Tensor>& gather_list, int dst, const Group& group,
               bool async_op) {
  const auto& g = group_or_default(group, "gather");
  return finish(g->gather(gather_list, tensor, group_rank(*g, dst, "gather", "dst")), async_op);
}

WorkPtr scatter(Tensor& tensor, const std::vector<Tensor>& scatter_list, int src,
                const Group& group, bool async_op) {
  const auto& g = group_or_default(group, "scatter");
  return finish(g->scatter(tensor, scatter_list, group_rank(*g, src, "scatter", "src")), async_op);
}

WorkPtr all_to_all_single(Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& output_split_sizes,
                          const std::vector<int64_t>& input_split_sizes, const Group& group,
                          bool async_op) {
  return finish(group_or_default(group, "all_to_all_single")
                    ->alltoall_single(output, input, output_split_sizes, input_split_sizes),
                async_op);
}

WorkPtr barrier(const Group& group, bool async_op) {
  return finish(group_or_default(group, "barrier")->barrier(), async_op);
}

WorkPtr isend(const Tensor& tensor, int dst, const Group& group, int tag) {
  const auto& g = group_or_default(group, "isend");
  return g->send(tensor, group_rank(*g, dst, "isend", "dst"), tag);
}

WorkPtr irecv(Tensor& tensor, int src, const Group& group, int tag) {
  const auto& g = group_or_default(group, "irecv");
  return g->recv(tensor, group_rank(*g, src, "irecv", "src"), tag);
}

void send(const Tensor& tensor, int dst, const Group& group, int tag) {
  isend(tensor, dst, group, tag)->wait();
}

void recv(Tensor& tensor, int src, const Group& group, int tag) {
  irecv(tensor, src, group, tag)->wait();
}

}  // namespace xten::distributed
