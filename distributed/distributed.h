#pragma once
// xten::distributed: torch.distributed's functions (docs/distributed.md). One process per rank;
// ranks meet through a store and Gloo moves the bytes.
//
//   namespace dist = xten::distributed;
//   dist::init_process_group("gloo");            // env://: RANK, WORLD_SIZE, MASTER_ADDR/PORT
//   dist::all_reduce(grad, dist::ReduceOp::AVG);
//   auto work = dist::all_reduce(t, dist::ReduceOp::SUM, nullptr, /*async_op=*/true);
//   ... work->wait();
//
// `src`/`dst` arguments are ranks of the job (the default group's), as in torch.distributed;
// `group` null means the default group. A process that is not a member of `group` gets
// ValueError.
#include <xten/distributed/process_group.h>
#include <xten/distributed/store.h>

namespace xten::distributed {

struct InitOptions {
  std::string backend = "gloo";
  // "env://" (MASTER_ADDR, MASTER_PORT, and RANK/WORLD_SIZE unless given), "tcp://host:port",
  // "file:///path" (a FileStore directory on a file system every rank sees).
  std::string init_method = "env://";
  int rank = -1;        // -1: from the environment (RANK)
  int world_size = -1;  // -1: from the environment (WORLD_SIZE)
  Milliseconds timeout = kDefaultTimeout;
  std::shared_ptr<Store> store;  // given: used instead of init_method
};

// Starts this process's membership of the job: makes the store (rank 0 serves a TCP one) and
// the default group. ValueError for a bad backend, method or rank; DistributedError when the
// others cannot be reached within the timeout. Twice without destroy_process_group(): error.
void init_process_group(const InitOptions& options = {});
void init_process_group(const std::string& backend, const std::string& init_method = "env://",
                        int rank = -1, int world_size = -1, Milliseconds timeout = kDefaultTimeout);
// Leaves: drops the default group, every subgroup and the store.
void destroy_process_group();
bool is_initialized();
// The default group (error when not initialized).
const std::shared_ptr<ProcessGroup>& default_group();
// This process's rank and the job's size, in `group` (null: the default group).
int get_rank(const std::shared_ptr<ProcessGroup>& group = nullptr);
int get_world_size(const std::shared_ptr<ProcessGroup>& group = nullptr);

// A group of some of the job's ranks. Every rank of the job must call it, with the same ranks
// (sorted; all ranks when empty), in the same order as the other new_group calls. Returns null
// on the ranks that are not members.
std::shared_ptr<ProcessGroup> new_group(std::vector<int> ranks = {},
                                        Milliseconds timeout = Milliseconds(-1));

// The collectives (ProcessGroup's, with job ranks for src/dst). Synchronous unless async_op,
// which returns the Work to wait on; synchronous calls return a completed Work.
using Group = std::shared_ptr<ProcessGroup>;
WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::SUM, const Group& group = nullptr,
                   bool async_op = false);
WorkPtr broadcast(Tensor& tensor, int src, const Group& group = nullptr, bool async_op = false);
WorkPtr reduce(Tensor& tensor, int dst, ReduceOp op = ReduceOp::SUM, const Group& group = nullptr,
               bool async_op = false);
WorkPtr all_gather(std::vector<Tensor>& tensor_list, const Tensor& tensor,
                   const Group& group = nullptr, bool async_op = false);
WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, const Group& group = nullptr,
                               bool async_op = false);
WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM,
                              const Group& group = nullptr, bool async_op = false);
WorkPtr gather(const Tensor& tensor, std::vector<Tensor>& gather_list, int dst,
               const Group& group = nullptr, bool async_op = false);
WorkPtr scatter(Tensor& tensor, const std::vector<Tensor>& scatter_list, int src,
                const Group& group = nullptr, bool async_op = false);
WorkPtr all_to_all_single(Tensor& output, const Tensor& input,
                          const std::vector<int64_t>& output_split_sizes = {},
                          const std::vector<int64_t>& input_split_sizes = {},
                          const Group& group = nullptr, bool async_op = false);
WorkPtr barrier(const Group& group = nullptr, bool async_op = false);
void send(const Tensor& tensor, int dst, const Group& group = nullptr, int tag = 0);
void recv(Tensor& tensor, int src, const Group& group = nullptr, int tag = 0);
WorkPtr isend(const Tensor& tensor, int dst, const Group& group = nullptr, int tag = 0);
WorkPtr irecv(Tensor& tensor, int src, const Group& group = nullptr, int tag = 0);

}  // namespace xten::distributed
