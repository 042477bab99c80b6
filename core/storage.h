#pragma once
// Storage: a refcounted buffer on one device. Tensors that are views of each other share it.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <xten/core/allocator.h>

namespace xten {

class Storage {
 public:
  Storage() = default;
  // Allocates `nbytes` with `allocator`.
  Storage(size_t nbytes, Allocator* allocator, Device device)
      : impl_(std::make_shared<Impl>(allocator->allocate(nbytes, device), nbytes, allocator)) {}
  // Wraps memory someone else owns (from_blob); `deleter` may be a no-op.
  Storage(DataPtr data, size_t nbytes)
      : impl_(std::make_shared<Impl>(std::move(data), nbytes, nullptr)) {}

  bool defined() const { return impl_ != nullptr; }
  void* data() const { return impl_->data.get(); }
  size_t nbytes() const { return impl_->nbytes; }
  Device device() const { return impl_->data.device(); }
  Allocator* allocator() const { return impl_->allocator; }
  const DataPtr& data_ptr() const { return impl_->data; }
  long use_count() const { return impl_.use_count(); }
  bool is_alias_of(const Storage& o) const { return impl_ == o.impl_; }

  // The version counter (Note [Version counter], docs/autograd.md): every op that writes the
  // storage in place bumps it, so autograd can tell that a tensor it saved has changed. It
  // lives with the storage, so a tensor and all its views share it.
  uint32_t version() const { return impl_ ? impl_->version.load(std::memory_order_relaxed) : 0; }
  void bump_version() const {
    if (impl_) impl_->version.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct Impl {
    Impl(DataPtr d, size_t n, Allocator* a) : data(std::move(d)), nbytes(n), allocator(a) {}
    DataPtr data;
    size_t nbytes;
    Allocator* allocator;  // null for memory the storage does not own
    std::atomic<uint32_t> version{0};
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace xten
