#pragma once
// ProcessGroup: the ranks of a job (or a subgroup of them) and the collectives between them,
// moved by Gloo over TCP (docs/distributed.md "Process groups"). c10d's operations; ranks here
// are ranks within the group.
//
// Every collective returns a Work at once: the operation runs on the group's communication
// thread, in the order the calls were made (every rank must make the same calls in the same
// order). Work::wait() blocks until it is done, raises its error, and only then are the results
// in the caller's tensors. A synchronous call is the call followed by wait(). CPU tensors that
// are contiguous are used in place; others (strided, XPU) go through a host copy, made on the
// calling thread before the operation and copied back by wait().
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <xten/core/tensor.h>
#include <xten/distributed/store.h>

namespace xten::distributed {

namespace detail {
struct CollectiveHeader;  // Note [Agreement before a collective] (process_group.cpp)
}

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };
const char* to_string(ReduceOp op);

// The handle of one operation in flight.
class Work {
 public:
  // Blocks until the operation is done (at most `timeout`; a negative one: the group's) and
  // raises its error; then the results are in the caller's tensors. Later calls return at once.
  // DistributedTimeoutError when it is not done in time (the operation goes on).
  void wait(Milliseconds timeout = Milliseconds(-1));
  bool is_completed() const;
  // Done without an error (false while running).
  bool is_success() const;
  std::exception_ptr exception() const;

  // For ProcessGroup: the operation finished on the communication thread (error: null if none).
  void mark_done(std::exception_ptr error);
  // `finish` runs in wait() on the caller's thread after success (copies results back).
  Work(std::string op, Milliseconds timeout, std::function<void()> finish)
      : op_(std::move(op)), timeout_(timeout), finish_(std::move(finish)) {}

 private:
  std::string op_;
  Milliseconds timeout_;
  std::function<void()> finish_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false, finished_ = false;
  std::exception_ptr error_;
};
using WorkPtr = std::shared_ptr<Work>;

class ProcessGroup {
 public:
  // Meets the other `size` - 1 members through `store` (keys under the group's own prefix) and
  // connects to each of them. `address`: the local address the transport listens on (the
  // interface the other ranks reach this one through). Collectives time out after `timeout`.
  ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Milliseconds timeout,
               const std::string& address, std::vector<int> global_ranks = {});
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The job's rank of each member, in group order.
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  Milliseconds timeout() const { return timeout_; }
  const std::shared_ptr<Store>& store() const { return store_; }

  // `tensor` on every rank becomes op over the ranks' tensors (AVG: floating dtypes only).
  WorkPtr allreduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM);
  // `tensor` on every rank becomes root's.
  WorkPtr broadcast(Tensor& tensor, int root);
  // root's `tensor` becomes op over the ranks' tensors; the others' are left as they were.
  WorkPtr reduce(Tensor& tensor, int root, ReduceOp op = ReduceOp::SUM);
  // outputs[r] (size() tensors, each input's shape) becomes rank r's input.
  WorkPtr allgather(std::vector<Tensor>& outputs, const Tensor& input);
  // `output` ([size() * n, ...] of input [n, ...], or size() * numel elements) holds the ranks'
  // inputs one after the other.
  WorkPtr allgather_into_tensor(Tensor& output, const Tensor& input);
  // `output` becomes this rank's chunk (the rank-th of size() along dim 0) of op over the
  // ranks' inputs. Runs as an allreduce of the whole input (docs/distributed.md says the cost).
  WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM);
  // On root, outputs[r] becomes rank r's input (outputs is empty on the others).
  WorkPtr gather(std::vector<Tensor>& outputs, const Tensor& input, int root);
  // `output` becomes root's inputs[rank] (inputs is empty on the others).
  WorkPtr scatter(Tensor& output, const std::vector<Tensor>& inputs, int root);
  // Rank r's input rows [sum(in_splits[:q]), +in_splits[q]) go to rank q, which places them at
  // its out_splits[r] rows; empty splits mean equal parts of dim 0.
  WorkPtr alltoall_single(Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& output_split_sizes = {},
                          const std::vector<int64_t>& input_split_sizes = {});
  WorkPtr barrier();
  // Point to point, posted at once (not queued behind collectives); `tag` tells messages
  // between the same two ranks apart.
  WorkPtr send(const Tensor& tensor, int dst, int tag = 0);
  WorkPtr recv(Tensor& tensor, int src, int tag = 0);

 private:
  struct Impl;
  WorkPtr enqueue(std::string op, detail::CollectiveHeader check,
                  std::function<void(uint32_t tag)> run, std::function<void()> finish);
  void check_rank(const char* op, const char* what, int r) const;

  std::shared_ptr<Store> store_;
  int rank_, size_;
  std::vector<int> global_ranks_;
  Milliseconds timeout_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xten::distributed
