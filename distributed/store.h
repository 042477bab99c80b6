#pragma once
// Stores: the key-value places where the ranks of a job meet (docs/distributed.md "Stores"),
// with c10d's operations. TCPStore is served by one process (rank 0) and reached over TCP by
// all; FileStore keeps its keys as files in a directory of a shared file system; PrefixStore
// puts a namespace in front of another store's keys (one per process group).
//
//   auto store = std::make_shared<TCPStore>("127.0.0.1", 29500, /*is_master=*/rank == 0);
//   store->set("ready/" + std::to_string(rank), "1");
//   store->wait({"ready/0", "ready/1"});
//
// Blocking calls (get, wait) wait at most the store's timeout (or the one given) and then raise
// DistributedTimeoutError naming the keys; a server that went away raises DistributedError.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <xten/core/error.h>

namespace xten::distributed {

// A collective or store operation failed: a peer went away, sizes disagreed across ranks, the
// network refused. The message names the operation and the ranks involved.
class DistributedError : public Error {
 public:
  explicit DistributedError(const std::string& msg) : Error(msg) {}
};
// A blocking operation did not complete within its timeout.
class DistributedTimeoutError : public DistributedError {
 public:
  explicit DistributedTimeoutError(const std::string& msg) : DistributedError(msg) {}
};

using Bytes = std::vector<uint8_t>;
using Milliseconds = std::chrono::milliseconds;

// The default of stores and process groups: c10d's 30 minutes.
constexpr Milliseconds kDefaultTimeout = std::chrono::minutes(30);

class Store {
 public:
  explicit Store(Milliseconds timeout = kDefaultTimeout) : timeout_(timeout) {}
  virtual ~Store() = default;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  void set(const std::string& key, const std::string& value) {
    set(key, Bytes(value.begin(), value.end()));
  }
  // The value of `key`, waiting for it up to timeout().
  virtual Bytes get(const std::string& key) = 0;
  std::string get_string(const std::string& key) {
    Bytes b = get(key);
    return std::string(b.begin(), b.end());
  }
  // Adds `amount` to the integer at `key` (0 when absent) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  // Sets `key` to `desired` if its value is `expected` (or it is absent and `expected` is
  // empty); returns the value it has afterwards.
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  // Whether every key is present (does not wait).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Waits until every key is present.
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  virtual void wait(const std::vector<std::string>& keys, Milliseconds timeout) = 0;
  // Removes `key`; whether it was there.
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;

  Milliseconds timeout() const { return timeout_; }
  void set_timeout(Milliseconds timeout) { timeout_ = timeout; }

 protected:
  Milliseconds timeout_;
};

// The store of a job served over TCP. The master (is_master, rank 0's process) listens on
// host:port (port 0: one the kernel picks, read back with port()); every instance, the
// master's too, is a client of it. A client retries connecting until the timeout, so ranks
// may start in any order. DistributedError for a port in use, a master that cannot be
// reached within the timeout, or a server that went away.
class TCPStore final : public Store {
 public:
  TCPStore(std::string host, int port, bool is_master, Milliseconds timeout = kDefaultTimeout);
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  // The local address of the connection to the master: the interface this process reaches the
  // other ranks through (what the process group's transport binds to).
  std::string local_address() const;

 private:
  class Server;
  class Client;
  std::string host_;
  int port_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

// Keys as files in `path` (made if absent), for ranks that share a file system. Writes are
// atomic (a temporary file renamed); add and compare_set hold a lock file (flock).
class FileStore final : public Store {
 public:
  explicit FileStore(std::string path, Milliseconds timeout = kDefaultTimeout);

  void set(const std::string& key, const Bytes& value) override;
  using Store::set;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;

  const std::string& path() const { return path_; }

 private:
  std::string file_of(const std::string& key) const;
  std::string path_;
};

// Another store's keys under "prefix/".
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store)
      : Store(store->timeout()), prefix_(std::move(prefix)), store_(std::move(store)) {}

  void set(const std::string& key, const Bytes& value) override { store_->set(k(key), value); }
  using Store::set;
  Bytes get(const std::string& key) override { return store_->get(k(key)); }
  int64_t add(const std::string& key, int64_t amount) override {
    return store_->add(k(key), amount);
  }
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    return store_->compare_set(k(key), expected, desired);
  }
  bool check(const std::vector<std::string>& keys) override { return store_->check(ks(keys)); }
  using Store::wait;
  void wait(const std::vector<std::string>& keys, Milliseconds timeout) override {
    store_->wait(ks(keys), timeout);
  }
  bool delete_key(const std::string& key) override { return store_->delete_key(k(key)); }
  int64_t num_keys() override { return store_->num_keys(); }
  const std::shared_ptr<Store>& underlying() const { return store_; }

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> ks(const std::vector<std::string>& keys) const {
    std::vector<std::string> r;
    for (const auto& key : keys) r.push_back(k(key));
    return r;
  }
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace xten::distributed
