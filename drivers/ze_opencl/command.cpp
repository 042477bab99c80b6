// Command queues, command lists, events and fences of the ze_opencl driver. Every queue and
// immediate list is an in-order OpenCL queue with profiling on (for kernel timestamps).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "ze_opencl.h"

using namespace ze_opencl;

namespace {

// ---- events (Note [Events over OpenCL] in ze_opencl.h) -------------------------------------

// The OpenCL event a command must wait on for `e`, retained; null if `e` is already signalled.
cl_event dependency(ze_event_handle_t e, cl_context ctx) {
  std::lock_guard<std::mutex> lock(e->mutex);
  if (e->source) {
    clRetainEvent(e->source);
    return e->source;
  }
  if (e->signaled) return nullptr;
  if (!e->early) e->early = clCreateUserEvent(ctx, nullptr);
  clRetainEvent(e->early);
  return e->early;
}

struct SignalCallback {
  ze_event_handle_t event;
  uint64_t generation;
};

void CL_CALLBACK on_source_complete(cl_event, cl_int, void* data) {
  auto* cb = static_cast<SignalCallback*>(data);
  ze_event_handle_t e = cb->event;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    if (e->generation == cb->generation) {
      e->signaled = true;
      if (e->early) clSetUserEventStatus(e->early, CL_COMPLETE);
    }
  }
  e->cv.notify_all();
  delete cb;
}

// `out` is the OpenCL event of the command that signals `e`.
void attach_signal(ze_event_handle_t e, cl_event out) {
  std::unique_lock<std::mutex> lock(e->mutex);
  if (e->source) clReleaseEvent(e->source);
  clRetainEvent(out);
  e->source = out;
  e->signaled = false;
  e->have_timestamps = false;
  const bool need_callback = e->early != nullptr;
  const uint64_t gen = e->generation;
  lock.unlock();
  e->cv.notify_all();  // host waiters blocked before the signal was appended
  if (need_callback)
    clSetEventCallback(out, CL_COMPLETE, on_source_complete, new SignalCallback{e, gen});
}

bool source_complete(cl_event src) {
  cl_int status = CL_QUEUED;
  clGetEventInfo(src, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
  return status == CL_COMPLETE || status < 0;
}

struct WaitList {
  std::vector<cl_event> events;
  WaitList(const std::vector<ze_event_handle_t>& waits, cl_context ctx) {
    for (ze_event_handle_t w : waits)
      if (cl_event ev = dependency(w, ctx)) events.push_back(ev);
  }
  ~WaitList() {
    for (cl_event ev : events) clReleaseEvent(ev);
  }
  cl_uint size() const { return static_cast<cl_uint>(events.size()); }
  const cl_event* data() const { return events.empty() ? nullptr : events.data(); }
};

cl_context queue_context(cl_command_queue q) {
  cl_context ctx = nullptr;
  clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, nullptr);
  return ctx;
}

ze_result_t check_waits(uint32_t n, ze_event_handle_t* waits) {
  if (n && !waits) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < n; ++i)
    if (!waits[i]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ZE_RESULT_SUCCESS;
}

// Appends `c` to `list`: enqueued now on an immediate list, recorded on a regular one.
ze_result_t append(ze_command_list_handle_t list, Command&& c, uint32_t nwait,
                   ze_event_handle_t* waits) {
  if (ze_result_t r = check_waits(nwait, waits); r != ZE_RESULT_SUCCESS) return r;
  c.waits.assign(waits, waits + nwait);
  if (list->immediate) {
    ze_result_t r = enqueue(list->immediate, c, &list->last);
    if (r == ZE_RESULT_SUCCESS && list->synchronous) r = from_cl(clFinish(list->immediate));
    return r;
  }
  if (list->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  list->commands.push_back(std::move(c));
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t zoEventHostSignal(ze_event_handle_t e);

namespace ze_opencl {

cl_command_queue create_queue(ze_context_handle_t context, ze_device_handle_t device) {
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueueWithProperties(context->cl, device->cl, props, &err);
  return err == CL_SUCCESS ? q : nullptr;
}

// Note [Barriers on in-order queues]: every queue is in order, so a barrier that waits on no
// event and signals one needs no command of its own: the signal is attached to the queue's
// last command (or given at once if there was none). This saves PoCL a command, and a wake-up
// of its worker threads, on every stream synchronize.
ze_result_t enqueue(cl_command_queue q, const Command& c, cl_event* last) {
  if (c.kind == Command::kBarrier && c.waits.empty()) {
    if (!c.signal) return ZE_RESULT_SUCCESS;
    if (*last) {
      attach_signal(c.signal, *last);
    } else {
      zoEventHostSignal(c.signal);
    }
    return ZE_RESULT_SUCCESS;
  }
  const WaitList deps(c.waits, c.waits.empty() ? nullptr : queue_context(q));
  cl_event out = nullptr;
  cl_event* outp = &out;
  cl_int err = CL_SUCCESS;
  switch (c.kind) {
    case Command::kCopy:
      err = clEnqueueSVMMemcpy(q, CL_FALSE, c.dst, c.src, c.size, deps.size(), deps.data(), outp);
      break;
    case Command::kFill:
      err = clEnqueueSVMMemFill(q, c.dst, c.pattern.data(), c.pattern.size(), c.size, deps.size(),
                                deps.data(), outp);
      break;
    case Command::kBarrier:
      if (outp || deps.size())
        err = clEnqueueBarrierWithWaitList(q, deps.size(), deps.data(), outp);
      break;
    case Command::kLaunch: {
      ze_kernel_handle_t k = c.kernel;
      std::lock_guard<std::mutex> lock(k->mutex);
      for (size_t i = 0; i < c.args.size() && err == CL_SUCCESS; ++i) {
        const KernelArg& a = c.args[i];
        const cl_uint idx = static_cast<cl_uint>(i);
        switch (a.kind) {
          case KernelArg::kValue:
            err = clSetKernelArg(k->cl, idx, a.bytes.size(), a.bytes.data());
            break;
          case KernelArg::kPointer:
            err = clSetKernelArgSVMPointer(k->cl, idx, a.pointer);
            break;
          case KernelArg::kLocal:
            err = clSetKernelArg(k->cl, idx, a.local_size, nullptr);
            break;
          case KernelArg::kUnset:
            return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
        }
      }
      if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, k->cl, 3, nullptr, c.global, c.local, deps.size(),
                                     deps.data(), outp);
      break;
    }
  }
  if (err != CL_SUCCESS) return from_cl(err);
  if (c.signal) attach_signal(c.signal, out);
  if (*last) clReleaseEvent(*last);
  *last = out;
  return ZE_RESULT_SUCCESS;
}

}  // namespace ze_opencl

// ---- command queues ----------------------------------------------------------------------
ze_result_t zoCommandQueueCreate(ze_context_handle_t c, ze_device_handle_t d,
                                 const ze_command_queue_desc_t* desc,
                                 ze_command_queue_handle_t* out) {
  if (!c || !d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal != 0 || desc->index != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cl_command_queue q = create_queue(c, d);
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  auto* h = new _ze_command_queue_handle_t;
  h->context = c;
  h->device = d;
  h->cl = q;
  h->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  *out = h;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandQueueDestroy(ze_command_queue_handle_t q) {
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  clFinish(q->cl);
  if (q->last) clReleaseEvent(q->last);
  clReleaseCommandQueue(q->cl);
  delete q;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandQueueExecuteCommandLists(ze_command_queue_handle_t q, uint32_t n,
                                              ze_command_list_handle_t* lists,
                                              ze_fence_handle_t fence) {
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!lists) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (n == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < n; ++i) {
    if (!lists[i]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (lists[i]->immediate || !lists[i]->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  std::lock_guard<std::mutex> lock(q->mutex);
  for (uint32_t i = 0; i < n; ++i)
    for (const Command& c : lists[i]->commands)
      if (ze_result_t r = enqueue(q->cl, c, &q->last); r != ZE_RESULT_SUCCESS) return r;
  if (fence) {
    std::lock_guard<std::mutex> lock(fence->mutex);
    if (fence->marker) clReleaseEvent(fence->marker);
    fence->marker = nullptr;
    fence->signaled = false;
    if (cl_int err = clEnqueueMarkerWithWaitList(q->cl, 0, nullptr, &fence->marker);
        err != CL_SUCCESS)
      return from_cl(err);
  }
  if (q->synchronous) return from_cl(clFinish(q->cl));
  clFlush(q->cl);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandQueueSynchronize(ze_command_queue_handle_t q, uint64_t timeout) {
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (timeout == UINT64_MAX) return from_cl(clFinish(q->cl));
  // A bounded wait: a marker polled until the deadline.
  cl_event marker = nullptr;
  if (cl_int err = clEnqueueMarkerWithWaitList(q->cl, 0, nullptr, &marker); err != CL_SUCCESS)
    return from_cl(err);
  clFlush(q->cl);
  const uint64_t deadline = monotonic_raw_ns() + timeout;
  bool done;
  while (!(done = source_complete(marker)) && monotonic_raw_ns() < deadline)
    std::this_thread::yield();
  clReleaseEvent(marker);
  return done ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

// ---- command lists -----------------------------------------------------------------------
ze_result_t zoCommandListCreate(ze_context_handle_t c, ze_device_handle_t d,
                                const ze_command_list_desc_t* desc, ze_command_list_handle_t* out) {
  if (!c || !d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto* l = new _ze_command_list_handle_t;
  l->context = c;
  l->device = d;
  *out = l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandListCreateImmediate(ze_context_handle_t c, ze_device_handle_t d,
                                         const ze_command_queue_desc_t* desc,
                                         ze_command_list_handle_t* out) {
  if (!c || !d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  cl_command_queue q = create_queue(c, d);
  if (!q) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  auto* l = new _ze_command_list_handle_t;
  l->context = c;
  l->device = d;
  l->immediate = q;
  l->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  *out = l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandListDestroy(ze_command_list_handle_t l) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (l->immediate) {
    clFinish(l->immediate);
    if (l->last) clReleaseEvent(l->last);
    clReleaseCommandQueue(l->immediate);
  }
  delete l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandListClose(ze_command_list_handle_t l) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (l->immediate) return ZE_RESULT_SUCCESS;
  l->closed = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandListReset(ze_command_list_handle_t l) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  l->commands.clear();
  l->closed = false;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoCommandListAppendBarrier(ze_command_list_handle_t l, ze_event_handle_t signal,
                                       uint32_t nwait, ze_event_handle_t* waits) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Command c(Command::kBarrier);
  c.signal = signal;
  return append(l, std::move(c), nwait, waits);
}

ze_result_t zoCommandListAppendMemoryCopy(ze_command_list_handle_t l, void* dst, const void* src,
                                          size_t size, ze_event_handle_t signal, uint32_t nwait,
                                          ze_event_handle_t* waits) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Command c(Command::kCopy);
  c.dst = dst;
  c.src = src;
  c.size = size;
  c.signal = signal;
  if (size == 0) c.kind = Command::kBarrier;
  return append(l, std::move(c), nwait, waits);
}

ze_result_t zoCommandListAppendMemoryFill(ze_command_list_handle_t l, void* ptr,
                                          const void* pattern, size_t pattern_size, size_t size,
                                          ze_event_handle_t signal, uint32_t nwait,
                                          ze_event_handle_t* waits) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !pattern) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (pattern_size == 0 || pattern_size > 128 || (pattern_size & (pattern_size - 1)))
    return ZE_RESULT_ERROR_INVALID_SIZE;
  if (size % pattern_size) return ZE_RESULT_ERROR_INVALID_SIZE;
  Command c(Command::kFill);
  c.dst = ptr;
  c.size = size;
  c.pattern.assign(static_cast<const uint8_t*>(pattern),
                   static_cast<const uint8_t*>(pattern) + pattern_size);
  c.signal = signal;
  if (size == 0) c.kind = Command::kBarrier;
  return append(l, std::move(c), nwait, waits);
}

ze_result_t zoCommandListAppendSignalEvent(ze_command_list_handle_t l, ze_event_handle_t e) {
  if (!l || !e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Command c(Command::kBarrier);
  c.signal = e;
  return append(l, std::move(c), 0, nullptr);
}

ze_result_t zoCommandListAppendWaitOnEvents(ze_command_list_handle_t l, uint32_t n,
                                            ze_event_handle_t* events) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!events) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return append(l, Command(Command::kBarrier), n, events);
}

ze_result_t zoCommandListAppendLaunchKernel(ze_command_list_handle_t l, ze_kernel_handle_t k,
                                            const ze_group_count_t* groups,
                                            ze_event_handle_t signal, uint32_t nwait,
                                            ze_event_handle_t* waits) {
  if (!l || !k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!groups) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Command c(Command::kLaunch);
  c.kernel = k;
  {
    std::lock_guard<std::mutex> lock(k->mutex);
    for (const KernelArg& a : k->args)
      if (a.kind == KernelArg::kUnset) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    c.args = k->args;  // Level Zero captures arguments at append time
    for (int i = 0; i < 3; ++i) c.local[i] = k->group[i];
  }
  const uint32_t counts[3] = {groups->groupCountX, groups->groupCountY, groups->groupCountZ};
  for (int i = 0; i < 3; ++i) c.global[i] = c.local[i] * counts[i];
  c.signal = signal;
  if (counts[0] == 0 || counts[1] == 0 || counts[2] == 0) c.kind = Command::kBarrier;
  return append(l, std::move(c), nwait, waits);
}

// ---- event pools and events --------------------------------------------------------------
ze_result_t zoEventPoolCreate(ze_context_handle_t c, const ze_event_pool_desc_t* desc, uint32_t,
                              ze_device_handle_t*, ze_event_pool_handle_t* out) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  *out = new _ze_event_pool_handle_t{c, desc->count,
                                     (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0};
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoEventPoolDestroy(ze_event_pool_handle_t p) {
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoEventCreate(ze_event_pool_handle_t p, const ze_event_desc_t* desc,
                          ze_event_handle_t* out) {
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= p->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* e = new _ze_event_handle_t;
  e->pool = p;
  *out = e;
  return ZE_RESULT_SUCCESS;
}

namespace {

// Completes the early user event so that no command stays blocked on a dropped event.
void release_event_state(ze_event_handle_t e) {
  if (e->source) {
    clReleaseEvent(e->source);
    e->source = nullptr;
  }
  if (e->early) {
    cl_int status = CL_COMPLETE;
    clGetEventInfo(e->early, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
    if (status != CL_COMPLETE) clSetUserEventStatus(e->early, CL_COMPLETE);
    clReleaseEvent(e->early);
    e->early = nullptr;
  }
}

}  // namespace

ze_result_t zoEventDestroy(ze_event_handle_t e) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  cl_event src;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    src = e->source;
    if (src) clRetainEvent(src);
  }
  if (src) {  // a pending completion callback may still refer to e
    clWaitForEvents(1, &src);
    clReleaseEvent(src);
  }
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    ++e->generation;
    release_event_state(e);
  }
  delete e;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoEventHostSignal(ze_event_handle_t e) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard<std::mutex> lock(e->mutex);
    e->signaled = true;
    e->start_ns = e->end_ns = monotonic_raw_ns();  // a host signal happens now
    e->have_timestamps = true;
    if (e->early) clSetUserEventStatus(e->early, CL_COMPLETE);
  }
  e->cv.notify_all();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoEventQueryStatus(ze_event_handle_t e) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(e->mutex);
  if (e->signaled) return ZE_RESULT_SUCCESS;
  if (e->source && source_complete(e->source)) {
    e->signaled = true;
    return ZE_RESULT_SUCCESS;
  }
  return ZE_RESULT_NOT_READY;
}

ze_result_t zoEventHostSynchronize(ze_event_handle_t e, uint64_t timeout) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  const uint64_t deadline = timeout == UINT64_MAX ? UINT64_MAX : monotonic_raw_ns() + timeout;
  std::unique_lock<std::mutex> lock(e->mutex);
  // Until a signalling command is appended (or the host signals), wait for that.
  while (!e->signaled && !e->source) {
    if (timeout == UINT64_MAX) {
      e->cv.wait(lock);
    } else {
      const uint64_t now = monotonic_raw_ns();
      if (now >= deadline) return ZE_RESULT_NOT_READY;
      e->cv.wait_for(lock, std::chrono::nanoseconds(std::min<uint64_t>(deadline - now, 1000000)));
    }
  }
  if (e->signaled) return ZE_RESULT_SUCCESS;
  cl_event src = e->source;
  clRetainEvent(src);
  lock.unlock();
  bool done = true;
  if (timeout == UINT64_MAX) {
    clWaitForEvents(1, &src);
  } else {
    while (!(done = source_complete(src)) && monotonic_raw_ns() < deadline)
      std::this_thread::yield();
  }
  lock.lock();
  if (done && e->source == src) e->signaled = true;
  lock.unlock();
  clReleaseEvent(src);
  return done ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t zoEventHostReset(ze_event_handle_t e) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(e->mutex);
  ++e->generation;
  release_event_state(e);
  e->signaled = false;
  e->have_timestamps = false;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoEventQueryKernelTimestamp(ze_event_handle_t e, ze_kernel_timestamp_result_t* out) {
  if (!e) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->pool->timestamps) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!e->have_timestamps && !e->source)
    return e->signaled ? ZE_RESULT_ERROR_INVALID_ARGUMENT : ZE_RESULT_NOT_READY;
  if (!e->have_timestamps && !source_complete(e->source)) return ZE_RESULT_NOT_READY;
  if (!e->have_timestamps) {
    cl_ulong start = 0, end = 0;
    clGetEventProfilingInfo(e->source, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
    clGetEventProfilingInfo(e->source, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
    e->start_ns = start;
    e->end_ns = end;
    e->have_timestamps = true;
  }
  out->global.kernelStart = out->context.kernelStart = e->start_ns;
  out->global.kernelEnd = out->context.kernelEnd = e->end_ns;
  return ZE_RESULT_SUCCESS;
}

// ---- fences ------------------------------------------------------------------------------
ze_result_t zoFenceCreate(ze_command_queue_handle_t q, const ze_fence_desc_t* desc,
                          ze_fence_handle_t* out) {
  if (!q) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto* f = new _ze_fence_handle_t;
  f->queue = q;
  f->signaled = (desc->flags & ZE_FENCE_FLAG_SIGNALED) != 0;
  *out = f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoFenceDestroy(ze_fence_handle_t f) {
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (f->marker) clReleaseEvent(f->marker);
  delete f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoFenceQueryStatus(ze_fence_handle_t f) {
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(f->mutex);
  if (f->signaled || (f->marker && source_complete(f->marker))) return ZE_RESULT_SUCCESS;
  return ZE_RESULT_NOT_READY;
}

ze_result_t zoFenceHostSynchronize(ze_fence_handle_t f, uint64_t timeout) {
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  cl_event m;
  {
    std::lock_guard<std::mutex> lock(f->mutex);
    if (f->signaled) return ZE_RESULT_SUCCESS;
    if (!f->marker)
      return timeout == UINT64_MAX ? ZE_RESULT_ERROR_INVALID_ARGUMENT : ZE_RESULT_NOT_READY;
    m = f->marker;
    clRetainEvent(m);
  }
  bool done = true;
  if (timeout == UINT64_MAX) {
    clWaitForEvents(1, &m);
  } else {
    const uint64_t deadline = monotonic_raw_ns() + timeout;
    while (!(done = source_complete(m)) && monotonic_raw_ns() < deadline) std::this_thread::yield();
  }
  clReleaseEvent(m);
  return done ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t zoFenceReset(ze_fence_handle_t f) {
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(f->mutex);
  if (f->marker) clReleaseEvent(f->marker);
  f->marker = nullptr;
  f->signaled = false;
  return ZE_RESULT_SUCCESS;
}
