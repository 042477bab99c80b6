// TCPStore, FileStore (docs/distributed.md "Stores").
//
// Note [TCPStore protocol]
// One request, one reply, on a connection per client. A request is a command byte and a list of
// byte strings; a reply is a status byte (ok, timeout) and a list of byte strings; a string is
// its 64-bit length and its bytes. The server is one thread polling the listening socket and
// every connection; requests that wait (get, wait) park their connection on a waiter list that
// each set/add/compare_set revisits, and the server itself answers "timeout" at a waiter's
// deadline, so a client's connection always stays in step. The client gives the server its
// timeout plus a grace period before it calls the server lost.
#include <xten/distributed/store.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace xten::distributed {

namespace {

using Clock = std::chrono::steady_clock;

enum Command : uint8_t { kSet, kGet, kAdd, kCompareSet, kCheck, kWait, kDelete, kNumKeys };
enum Status : uint8_t { kOk, kTimeout };
// Time the client grants the server beyond the request's own timeout before it calls it lost.
constexpr Milliseconds kGrace = std::chrono::seconds(30);

[[noreturn]] void fail(const char* op, const std::string& msg) {
  throw DistributedError(xten::detail::error_message(op, msg));
}
[[noreturn]] void fail_timeout(const char* op, const std::string& msg) {
  throw DistributedTimeoutError(xten::detail::error_message(op, msg));
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "'" : ", '") + k + "'";
  return s;
}

Bytes to_bytes(const std::string& s) {
  return Bytes(s.begin(), s.end());
}
std::string to_string(const Bytes& b) {
  return std::string(b.begin(), b.end());
}

void put_u64(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// A message: a head byte and strings (Note [TCPStore protocol]).
Bytes encode(uint8_t head, const std::vector<Bytes>& parts) {
  Bytes out{head};
  put_u64(out, parts.size());
  for (const Bytes& p : parts) {
    put_u64(out, p.size());
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}
// A whole message at the front of `buf` (consumed), or nothing yet.
std::optional<std::pair<uint8_t, std::vector<Bytes>>> decode(Bytes& buf) {
  size_t pos = 0;
  auto need = [&](size_t n) { return buf.size() - pos >= n; };
  if (!need(9)) return std::nullopt;
  const uint8_t head = buf[0];
  const uint64_t count = get_u64(&buf[1]);
  pos = 9;
  std::vector<Bytes> parts;
  for (uint64_t i = 0; i < count; ++i) {
    if (!need(8)) return std::nullopt;
    const uint64_t len = get_u64(&buf[pos]);
    pos += 8;
    if (!need(len)) return std::nullopt;
    parts.emplace_back(buf.begin() + pos, buf.begin() + pos + len);
    pos += len;
  }
  buf.erase(buf.begin(), buf.begin() + pos);
  return std::make_pair(head, std::move(parts));
}

bool send_all(int fd, const Bytes& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += n;
  }
  return true;
}

int64_t parse_int(const Bytes& b, const char* op) {
  const std::string s = to_string(b);
  try {
    size_t used = 0;
    const int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  fail(op, fmt::format("the value '{}' is not an integer", s));
}

}  // namespace

// ---- server --------------------------------------------------------------------------------

class TCPStore::Server {
 public:
  explicit Server(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail("TCPStore", fmt::format("socket: {}", std::strerror(errno)));
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 1024) != 0) {
      const int err = errno;
      ::close(fd_);
      fail("TCPStore",
           fmt::format("the master cannot listen on port {}: {}{}", port, std::strerror(err),
                       err == EADDRINUSE ? " (another job or store holds it)" : ""));
    }
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (::pipe2(wake_, O_CLOEXEC) != 0) fail("TCPStore", "pipe failed");
    thread_ = std::thread([this] { loop(); });
  }
  ~Server() {
    const char c = 0;
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    for (auto& [fd, conn] : conns_) ::close(fd);
    ::close(fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return port_; }

 private:
  struct Waiter {
    int fd;
    uint8_t command;  // kGet or kWait
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  void loop() {
    while (true) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {fd_, POLLIN, 0}};
      for (auto& [fd, buf] : conns_) fds.push_back({fd, POLLIN, 0});
      int wait_ms = -1;
      if (!waiters_.empty()) {
        auto first = std::min_element(waiters_.begin(), waiters_.end(), [](auto& a, auto& b) {
                       return a.deadline < b.deadline;
                     })->deadline;
        wait_ms = static_cast<int>(std::max<int64_t>(
            0, std::chrono::duration_cast<Milliseconds>(first - Clock::now()).count() + 1));
      }
      if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) return;
      if (fds[0].revents) return;
      if (fds[1].revents & POLLIN) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) {
          const int one = 1;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          conns_[c];
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int fd = fds[i].fd;
        uint8_t chunk[65536];
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          drop(fd);
          continue;
        }
        if (n < 0) continue;
        Bytes& buf = conns_[fd];
        buf.insert(buf.end(), chunk, chunk + n);
        while (auto msg = decode(buf)) handle(fd, msg->first, msg->second);
      }
      expire();
    }
  }

  void drop(int fd) {
    ::close(fd);
    conns_.erase(fd);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [fd](const Waiter& w) { return w.fd == fd; }),
                   waiters_.end());
  }
  void reply(int fd, uint8_t status, const std::vector<Bytes>& parts) {
    if (!send_all(fd, encode(status, parts))) drop(fd);
  }
  bool present(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](auto& k) { return data_.count(k) > 0; });
  }
  // A waiter whose keys are all present is answered.
  void serve_waiters() {
    for (size_t i = 0; i < waiters_.size();) {
      if (present(waiters_[i].keys)) {
        Waiter w = waiters_[i];
        waiters_.erase(waiters_.begin() + i);
        if (w.command == kGet)
          reply(w.fd, kOk, {data_[w.keys[0]]});
        else
          reply(w.fd, kOk, {});
      } else {
        ++i;
      }
    }
  }
  void expire() {
    const auto now = Clock::now();
    for (size_t i = 0; i < waiters_.size();) {
      if (waiters_[i].deadline <= now) {
        const int fd = waiters_[i].fd;
        waiters_.erase(waiters_.begin() + i);
        reply(fd, kTimeout, {});
      } else {
        ++i;
      }
    }
  }

  void handle(int fd, uint8_t command, std::vector<Bytes>& a) {
    auto key = [&](size_t i) { return i < a.size() ? to_string(a[i]) : std::string(); };
    switch (command) {
      case kSet:
        data_[key(0)] = a.size() > 1 ? a[1] : Bytes();
        reply(fd, kOk, {});
        serve_waiters();
        break;
      case kGet:
      case kWait: {
        // get: [key, timeout_ms]; wait: [timeout_ms, keys...]
        std::vector<std::string> keys;
        int64_t timeout_ms = 0;
        if (command == kGet) {
          keys = {key(0)};
          timeout_ms = a.size() > 1 ? std::stoll(key(1)) : 0;
        } else {
          timeout_ms = a.empty() ? 0 : std::stoll(key(0));
          for (size_t i = 1; i < a.size(); ++i) keys.push_back(key(i));
        }
        if (present(keys)) {
          reply(fd, kOk,
                command == kGet ? std::vector<Bytes>{data_[keys[0]]} : std::vector<Bytes>{});
        } else {
          waiters_.push_back({fd, command, keys, Clock::now() + Milliseconds(timeout_ms)});
        }
        break;
      }
      case kAdd: {
        int64_t v = 0;
        if (auto it = data_.find(key(0)); it != data_.end()) {
          try {
            v = std::stoll(to_string(it->second));
          } catch (const std::exception&) {
            v = 0;
          }
        }
        v += a.size() > 1 ? std::stoll(key(1)) : 0;
        data_[key(0)] = to_bytes(std::to_string(v));
        reply(fd, kOk, {to_bytes(std::to_string(v))});
        serve_waiters();
        break;
      }
      case kCompareSet: {
        auto it = data_.find(key(0));
        const Bytes& expected = a.size() > 1 ? a[1] : Bytes();
        const Bytes& desired = a.size() > 2 ? a[2] : Bytes();
        if ((it == data_.end() && expected.empty()) ||
            (it != data_.end() && it->second == expected))
          data_[key(0)] = desired;
        reply(fd, kOk, {data_.count(key(0)) ? data_[key(0)] : Bytes()});
        serve_waiters();
        break;
      }
      case kCheck: {
        std::vector<std::string> keys;
        for (size_t i = 0; i < a.size(); ++i) keys.push_back(key(i));
        reply(fd, kOk, {Bytes{static_cast<uint8_t>(present(keys))}});
        break;
      }
      case kDelete:
        reply(fd, kOk, {Bytes{static_cast<uint8_t>(data_.erase(key(0)) > 0)}});
        break;
      case kNumKeys:
        reply(fd, kOk, {to_bytes(std::to_string(data_.size()))});
        break;
      default:
        drop(fd);
    }
  }

  int fd_ = -1, port_ = 0;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::map<int, Bytes> conns_;  // connection -> bytes received, not yet a whole request
  std::map<std::string, Bytes> data_;
  std::vector<Waiter> waiters_;
};

// ---- client --------------------------------------------------------------------------------

class TCPStore::Client {
 public:
  Client(const std::string& host, int port, Milliseconds timeout)
      : where_(fmt::format("{}:{}", host, port)) {
    const auto deadline = Clock::now() + timeout;
    std::string last = "no attempt";
    while (true) {
      addrinfo hints{}, *res = nullptr;
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      if (rc != 0) {
        last = ::gai_strerror(rc);
      } else {
        for (addrinfo* ai = res; ai && fd_ < 0; ai = ai->ai_next) {
          const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
          if (fd < 0) continue;
          if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            fd_ = fd;
          } else {
            last = std::strerror(errno);
            ::close(fd);
          }
        }
        ::freeaddrinfo(res);
      }
      if (fd_ >= 0) break;
      if (Clock::now() >= deadline)
        fail_timeout("TCPStore",
                     fmt::format("could not reach the store's master at {} within {} ms "
                                 "(last attempt: {})",
                                 where_, timeout.count(), last));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~Client() { ::close(fd_); }

  // Sends a request and waits for its reply, at most `limit`.
  std::pair<uint8_t, std::vector<Bytes>> call(const char* op, uint8_t command,
                                              const std::vector<Bytes>& args, Milliseconds limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_) lost(op, "an earlier call lost the connection");
    if (!send_all(fd_, encode(command, args))) lost(op, std::strerror(errno));
    const auto deadline = Clock::now() + limit;
    while (true) {
      if (auto msg = decode(buf_)) return *msg;
      const auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) lost(op, "no reply");
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      uint8_t chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) lost(op, n == 0 ? "the server closed the connection" : std::strerror(errno));
      buf_.insert(buf_.end(), chunk, chunk + n);
    }
  }

  std::string local_address() const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    char host[NI_MAXHOST];
    ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST);
    return host;
  }

 private:
  [[noreturn]] void lost(const char* op, const std::string& why) {
    broken_ = true;
    fail(op, fmt::format("lost the store at {} ({}): did the master's process (rank 0) exit?",
                         where_, why));
  }
  std::string where_;
  int fd_ = -1;
  bool broken_ = false;
  Bytes buf_;
  std::mutex mutex_;
};

// ---- TCPStore ------------------------------------------------------------------------------

TCPStore::TCPStore(std::string host, int port, bool is_master, Milliseconds timeout)
    : Store(timeout), host_(std::move(host)), port_(port) {
  XTEN_CHECK(port >= 0 && port < 65536, ValueError, "TCPStore",
             "port must be in [0, 65536), but got {}", port);
  XTEN_CHECK(is_master || port > 0, ValueError, "TCPStore",
             "a client needs the master's port (got 0)");
  if (is_master) {
    server_ = std::make_unique<Server>(port);
    port_ = server_->port();
  }
  client_ = std::make_unique<Client>(host_, port_, timeout);
}

TCPStore::~TCPStore() {
  client_.reset();
  server_.reset();
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  client_->call("TCPStore::set", kSet, {to_bytes(key), value}, timeout_ + kGrace);
}

Bytes TCPStore::get(const std::string& key) {
  auto [status, r] =
      client_->call("TCPStore::get", kGet,
                    {to_bytes(key), to_bytes(std::to_string(timeout_.count()))}, timeout_ + kGrace);
  if (status == kTimeout)
    fail_timeout("TCPStore::get",
                 fmt::format("the key '{}' was not set within {} ms", key, timeout_.count()));
  return r.at(0);
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  auto r = client_->call("TCPStore::add", kAdd, {to_bytes(key), to_bytes(std::to_string(amount))},
                         timeout_ + kGrace);
  return parse_int(r.second.at(0), "TCPStore::add");
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  return client_
      ->call("TCPStore::compare_set", kCompareSet, {to_bytes(key), expected, desired},
             timeout_ + kGrace)
      .second.at(0);
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  std::vector<Bytes> args;
  for (const auto& k : keys) args.push_back(to_bytes(k));
  return client_->call("TCPStore::check", kCheck, args, timeout_ + kGrace).second.at(0).at(0) != 0;
}

void TCPStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  std::vector<Bytes> args{to_bytes(std::to_string(timeout.count()))};
  for (const auto& k : keys) args.push_back(to_bytes(k));
  if (client_->call("TCPStore::wait", kWait, args, timeout + kGrace).first == kTimeout)
    fail_timeout("TCPStore::wait", fmt::format("the keys {} were not all set within {} ms",
                                               join_keys(keys), timeout.count()));
}

bool TCPStore::delete_key(const std::string& key) {
  return client_->call("TCPStore::delete_key", kDelete, {to_bytes(key)}, timeout_ + kGrace)
             .second.at(0)
             .at(0) != 0;
}

int64_t TCPStore::num_keys() {
  return parse_int(
      client_->call("TCPStore::num_keys", kNumKeys, {}, timeout_ + kGrace).second.at(0),
      "TCPStore::num_keys");
}

std::string TCPStore::local_address() const {
  return client_->local_address();
}

// ---- FileStore -----------------------------------------------------------------------------

namespace {
// Holds an exclusive flock on `path` for its lifetime.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("FileStore", fmt::format("cannot open {}: {}", path, std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::close(fd_); }

 private:
  int fd_;
};

std::optional<Bytes> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

FileStore::FileStore(std::string path, Milliseconds timeout)
    : Store(timeout), path_(std::move(path)) {
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  XTEN_CHECK(std::filesystem::is_directory(path_), ValueError, "FileStore",
             "cannot make the directory '{}': {}", path_, ec.message());
}

// Keys may hold any character: the file name is the key's bytes in hex.
std::string FileStore::file_of(const std::string& key) const {
  std::string name = "k";
  for (unsigned char c : key) name += fmt::format("{:02x}", c);
  return path_ + "/" + name;
}

void FileStore::set(const std::string& key, const Bytes& value) {
  const std::string file = file_of(key);
  const std::string tmp = fmt::format("{}.tmp{}", file, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()), value.size());
    if (!out) fail("FileStore::set", fmt::format("cannot write {}", tmp));
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0)
    fail("FileStore::set", fmt::format("cannot rename {}: {}", tmp, std::strerror(errno)));
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout_);
  auto v = read_file(file_of(key));
  if (!v) fail("FileStore::get", fmt::format("the key '{}' vanished", key));
  return *v;
}

int64_t FileStore::add(const std::string& key, int64_t amount) {
  FileLock lock(path_ + "/lock");
  int64_t v = 0;
  if (auto b = read_file(file_of(key))) v = parse_int(*b, "FileStore::add");
  v += amount;
  set(key, to_bytes(std::to_string(v)));
  return v;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  FileLock lock(path_ + "/lock");
  auto cur = read_file(file_of(key));
  if ((!cur && expected.empty()) || (cur && *cur == expected)) {
    set(key, desired);
    return desired;
  }
  return cur ? *cur : Bytes();
}

bool FileStore::check(const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(),
                     [&](auto& k) { return std::filesystem::exists(file_of(k)); });
}

void FileStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!check(keys)) {
    if (Clock::now() >= deadline)
      fail_timeout("FileStore::wait", fmt::format("the keys {} were not all set within {} ms",
                                                  join_keys(keys), timeout.count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool FileStore::delete_key(const std::string& key) {
  return std::filesystem::remove(file_of(key));
}

int64_t FileStore::num_keys() {
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(path_)) {
    const std::string name = e.path().filename().string();
    n += name.size() > 0 && name[0] == 'k' && name.find(".tmp") == std::string::npos;
  }
  return n;
}

}  // namespace xten::distributed
