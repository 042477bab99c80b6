#pragma once
// What core/ knows of autograd: an opaque per-tensor state behind a pointer on TensorImpl
// (Note [Autograd meta], docs/autograd.md). autograd/ defines the concrete AutogradMeta and
// installs the factory that makes it at load, so core/ never includes autograd/.
#include <memory>

namespace xten {

class TensorImpl;

struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
  // Sets the flag of a leaf; `self` is the tensor that owns this meta (for checks and keys).
  virtual void set_requires_grad(bool requires_grad, TensorImpl* self) = 0;
};

using AutogradMetaFactory = std::unique_ptr<AutogradMetaInterface> (*)();
// Installed once by autograd/ at load; null before.
void set_autograd_meta_factory(AutogradMetaFactory factory);
AutogradMetaFactory autograd_meta_factory();

}  // namespace xten
