#pragma once
// The CPU elementwise engine: every pointwise op (binary, unary, copy, fill) goes through it.
//
// Note [Elementwise engine]
// prepare: the inputs broadcast to one shape; inputs whose dtype is not the op's compute
// dtype are converted (a one-element input into a small buffer, others by a copy); the
// output is allocated in the layout its operands give (Note [Pointwise layout], core/meta.h:
// contiguous when they are, NHWC for NHWC inputs), or, when given (in-place / out), checked:
// shape equal to the broadcast shape, no internal overlap, and the compute dtype castable to
// it. An output whose dtype differs from what the kernel writes is computed into a temporary
// and copied.
// run: dims are put in that layout's order (outermost first) and coalesced (dims that are
// contiguous in every operand merge), and the index space is split into [begin, end) ranges
// across threads; each range is walked as runs of the innermost dim, and the typed loop
// (loops.h) gets the operands' pointers and byte strides for one run. The engine knows no C++
// types; the loops know no shapes.
#include <array>
#include <initializer_list>

#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/core/tensor.h>

namespace xten::cpu {

constexpr int kMaxOperands = 4;  // output + 3 inputs (where, lerp)

class Elementwise {
 public:
  // `out` undefined: allocate. `result_dtype`: what the loop writes (Undefined: compute).
  Elementwise(const char* op, const Tensor& out, std::initializer_list<Tensor> inputs);

  Elementwise& compute_dtype(ScalarType t) {
    compute_ = t;
    return *this;
  }
  Elementwise& result_dtype(ScalarType t) {
    result_ = t;
    return *this;
  }
  // Input i keeps its own dtype instead of converting to the compute dtype (where's cond).
  Elementwise& keep_input_dtype(int i) {
    keep_dtype_[i] = true;
    return *this;
  }

  // Prepares operands; after this the loop runs with run().
  void prepare();
  ScalarType compute() const { return compute_; }
  ScalarType result() const { return result_; }
  int64_t numel() const { return numel_; }

  // Calls loop(char** data, const int64_t* byte_strides, int64_t n) for every inner run, then
  // finishes the output (copy from the temporary if one was needed) and returns it.
  template <class Loop>
  Tensor run(const Loop& loop);

 private:
  // What the loop sees of operand o (0: the output): its tensor, whether it was converted
  // into scalar_buf_, its element size, and the address of its first element.
  struct Operand {
    const Tensor* tensor;
    bool buffered;
    int64_t esize;
    char* data;
  };
  Operand operand(int o);
  void build_geometry();
  bool flat_geometry();
  Tensor finish();

  const char* op_;
  bool prepared_ = false;
  Tensor out_;     // what the caller gets
  Tensor target_;  // what the loop writes: out_, or a temporary of the result dtype
  std::array<Tensor, kMaxOperands - 1> inputs_;
  std::array<bool, kMaxOperands - 1> keep_dtype_{};
  int num_inputs_ = 0;
  ScalarType compute_ = ScalarType::Undefined;
  ScalarType result_ = ScalarType::Undefined;
  DimVector shape_;
  DimVector order_;  // the dims outermost first (Note [Pointwise layout]); empty: identity
  int64_t numel_ = 0;
  // Coalesced geometry; operand 0 is the output.
  DimVector dims_;
  std::array<DimVector, kMaxOperands> strides_;
  std::array<char*, kMaxOperands> data_{};
  // One-element inputs converted to the compute dtype live here.
  alignas(16) std::array<std::array<char, 16>, kMaxOperands> scalar_buf_{};
};

// Walks linear indices [begin, end) of `dims` (innermost last), calling loop on each run.
template <class Loop>
void walk_range(int nops, char* const* base, const DimVector& dims,
                const std::array<DimVector, kMaxOperands>& strides, int64_t begin, int64_t end,
                const Loop& loop) {
  const int nd = static_cast<int>(dims.size());
  std::array<char*, kMaxOperands> ptr{};
  std::array<int64_t, kMaxOperands> inner{};
  for (int o = 0; o < nops; ++o) inner[o] = nd ? strides[o][nd - 1] : 0;
  if (nd <= 1) {
    for (int o = 0; o < nops; ++o) ptr[o] = base[o] + begin * inner[o];
    loop(ptr.data(), inner.data(), end - begin);
    return;
  }
  DimVector idx(nd);
  int64_t rest = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rest % dims[d];
    rest /= dims[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (int o = 0; o < nops; ++o) {
      char* p = base[o];
      for (int d = 0; d < nd; ++d) p += idx[d] * strides[o][d];
      ptr[o] = p;
    }
    const int64_t n = std::min(dims[nd - 1] - idx[nd - 1], end - pos);
    loop(ptr.data(), inner.data(), n);
    pos += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] == dims[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class Loop>
Tensor Elementwise::run(const Loop& loop) {
  if (!prepared_) prepare();
  if (numel_ > 0) {
    const int nops = num_inputs_ + 1;
    auto chunk = [&](int64_t b, int64_t e) {
      walk_range(nops, data_.data(), dims_, strides_, b, e, loop);
    };
    if (numel_ < kParallelGrain)
      chunk(0, numel_);
    else
      parallel_for(numel_, kParallelGrain, chunk);
  }
  return finish();
}

// Writes `src` converted into `dst` (src broadcast to dst's shape); any dtypes (copy.cpp).
void copy_into(const char* op, const Tensor& dst, const Tensor& src);
// Converts one element between any two dtypes (copy.cpp).
void convert_element(const void* src, ScalarType src_dtype, void* dst, ScalarType dst_dtype);

}  // namespace xten::cpu
