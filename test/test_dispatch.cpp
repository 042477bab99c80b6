// dispatch/: key order, key sets, thread-local guards, registration, resolution order,
// boxed and fallthrough kernels, errors, and calls from many threads.
#include <atomic>
#include <thread>

#include <xten/dispatch/op_handles.h>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
// A private op per test: declared in a local Library, so it is withdrawn afterwards.
Tensor identity_cpu(const Tensor& t) {
  return t;
}
Tensor double_cpu(const Tensor& t) {
  return t * 2;
}
Tensor triple_composite(const Tensor& t) {
  return t * 3;
}
Tensor negate_any(const Tensor& t) {
  return -t;
}
Tensor bump_cpu(const Tensor& t) {  // dispatches nothing, so it runs under any included key
  t.data_ptr<float>()[0] += 1;
  return t;
}
Tensor wrong_signature(const Tensor& t, int64_t) {
  return t;
}

Tensor call_unary(const char* name, const Tensor& t) {
  return Dispatcher::singleton().find(name).typed<Tensor(const Tensor&)>().call(t);
}
}  // namespace

TEST(DispatchKey, PriorityOrder) {
  // docs/architecture.md, "Dispatch keys": backends < autograd < autocast.
  EXPECT_LT(DispatchKey::CPU, DispatchKey::XPU);
  EXPECT_LT(DispatchKey::XPU, DispatchKey::AutogradCPU);
  EXPECT_LT(DispatchKey::AutogradXPU, DispatchKey::AutocastCPU);
  EXPECT_LT(DispatchKey::AutocastCPU, DispatchKey::AutocastXPU);
  EXPECT_TRUE(is_alias_key(DispatchKey::CompositeImplicit));
}

TEST(DispatchKeySet, SetOperations) {
  DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::AutocastCPU);
  EXPECT_EQ(s.highest(), DispatchKey::AutocastCPU);
  EXPECT_EQ(s.remove(DispatchKey::AutocastCPU).highest(), DispatchKey::CPU);
  EXPECT_EQ(DispatchKeySet().highest(), DispatchKey::Undefined);
  EXPECT_EQ(s.to_string(), "{CPU, AutocastCPU}");
  // Only a tensor in the autograd graph carries the Autograd key (Note [Autograd key]).
  EXPECT_EQ(ones({1}).key_set().to_string(), "{CPU, AutocastCPU}");
  EXPECT_EQ(ones({1}).requires_grad_().key_set().to_string(), "{CPU, AutogradCPU, AutocastCPU}");
}

TEST(LocalDispatchKeySet, DefaultsAndGuards) {
  EXPECT_EQ(local_dispatch_key_set().excluded, kDefaultExcludedKeys);
  EXPECT_TRUE(local_dispatch_key_set().included.empty());
  {
    UnexcludeDispatchKeyGuard on(DispatchKeySet(DispatchKey::AutocastCPU));
    EXPECT_FALSE(local_dispatch_key_set().excluded.has(DispatchKey::AutocastCPU));
    {
      ExcludeDispatchKeyGuard off(DispatchKey::AutocastCPU);
      EXPECT_TRUE(local_dispatch_key_set().excluded.has(DispatchKey::AutocastCPU));
    }
    EXPECT_FALSE(local_dispatch_key_set().excluded.has(DispatchKey::AutocastCPU));
  }
  EXPECT_EQ(local_dispatch_key_set().excluded, kDefaultExcludedKeys);
  {
    IncludeDispatchKeyGuard g(DispatchKey::XPU);
    EXPECT_TRUE(local_dispatch_key_set().included.has(DispatchKey::XPU));
  }
  EXPECT_TRUE(local_dispatch_key_set().included.empty());
}

TEST(LocalDispatchKeySet, IsPerThread) {
  UnexcludeDispatchKeyGuard on(DispatchKeySet(DispatchKey::AutocastCPU));
  bool other_thread_excluded = false;
  std::thread([&] {
    other_thread_excluded = local_dispatch_key_set().excluded.has(DispatchKey::AutocastCPU);
  }).join();
  EXPECT_TRUE(other_thread_excluded);
}

TEST(Registration, DefImplCall) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("ident(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("ident", identity_cpu);
  Tensor a = ones({2});
  EXPECT_TRUE(call_unary("test::ident", a).is_same(a));
}

TEST(Registration, DuplicateKernelNamesBothSites) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("dup(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  const int first_line = __LINE__ + 1;
  cpu.impl("dup", identity_cpu);
  try {
    cpu.impl("dup", double_cpu);
    FAIL() << "expected a duplicate-registration error";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("a second kernel for 'dup' on CPU"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test/test_dispatch.cpp:" + std::to_string(first_line)), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("test/test_dispatch.cpp:" + std::to_string(first_line + 2)),
              std::string::npos)
        << msg;
  }
  EXPECT_THROW_MSG(def.def("dup(Tensor self) -> Tensor"), ValueError,
                   "'test::dup' is declared twice");
}

TEST(Registration, WithdrawnWhenLibraryDies) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("temp(Tensor self) -> Tensor");
  {
    Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
    cpu.impl("temp", double_cpu);
    EXPECT_EQ(call_unary("test::temp", ones({1})).item<float>(), 2.0f);
  }
  EXPECT_THROW_MSG(call_unary("test::temp", ones({1})), NotImplementedError,
                   "no kernel for 'temp' on CPU; registered: none");
}

TEST(Registration, SignatureMismatchIsATypeError) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("sig(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("sig", identity_cpu);
  Library xpu(Library::Kind::Impl, "test", DispatchKey::XPU, __FILE__, __LINE__);
  EXPECT_THROW_MSG(xpu.impl("sig", wrong_signature), TypeError,
                   "has a C++ signature other than the kernel at");
  EXPECT_THROW_MSG(
      (Dispatcher::singleton().find("test::sig").typed<Tensor(const Tensor&, int64_t)>()),
      TypeError, "declared with 1 arguments");
  EXPECT_THROW_MSG(Dispatcher::singleton().find("test::nope"), ValueError,
                   "no operator named 'test::nope'");
}

TEST(FunctionSchema, ParsesNamesTypesDefaultsAndAliases) {
  const FunctionSchema s = FunctionSchema::parse(
      "xten::add_.Tensor(Tensor(a!) self, Tensor? other, *, Scalar alpha=1, int[2] k=[1, 2], "
      "str mode='a, b') -> Tensor(a!)");
  EXPECT_EQ(s.name(), "xten::add_");
  EXPECT_EQ(s.overload(), "Tensor");
  EXPECT_EQ(s.full_name(), "xten::add_.Tensor");
  ASSERT_EQ(s.arguments().size(), 5u);
  EXPECT_TRUE(s.writes_argument(0));
  EXPECT_EQ(s.arguments()[0].alias->set, "a");
  EXPECT_FALSE(s.writes_argument(1));
  EXPECT_EQ(s.arguments()[1].type.str(), "Tensor?");
  EXPECT_FALSE(s.arguments()[1].kwarg_only);
  EXPECT_TRUE(s.arguments()[2].kwarg_only);
  EXPECT_EQ(s.arguments()[2].default_value.value(), "1");
  EXPECT_EQ(s.arguments()[3].type.str(), "int[]");
  EXPECT_EQ(s.arguments()[3].default_value.value(), "[1, 2]");
  EXPECT_EQ(s.arguments()[4].default_value.value(), "'a, b'");
  EXPECT_EQ(s.argument_index("alpha"), 2);
  EXPECT_EQ(s.argument_index("beta"), -1);
  EXPECT_TRUE(s.is_mutable());
  ASSERT_EQ(s.returns().size(), 1u);
  EXPECT_TRUE(s.returns()[0].alias->is_write);

  const FunctionSchema v = FunctionSchema::parse(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  EXPECT_FALSE(v.is_mutable());
  ASSERT_EQ(v.returns().size(), 2u);
  EXPECT_EQ(v.returns()[1].name, "indices");
  const FunctionSchema view = FunctionSchema::parse("split(Tensor(a) self) -> Tensor(a)[]");
  EXPECT_FALSE(view.returns()[0].alias->is_write);
  EXPECT_EQ(view.returns()[0].alias->set, "a");
  EXPECT_TRUE(view.returns()[0].type.list);
  EXPECT_TRUE(FunctionSchema::parse("f() -> ()").returns().empty());
}

TEST(FunctionSchema, MalformedSchemaNamesTheOpAndColumn) {
  EXPECT_THROW_MSG(FunctionSchema::parse("f(Tensor self -> Tensor"), ValueError,
                   "malformed schema for 'f' at column 15: expected ','");
  EXPECT_THROW_MSG(FunctionSchema::parse("g.x(Tensr self) -> Tensor"), ValueError,
                   "malformed schema for 'g.x' at column 5: expected a type (Tensor, Scalar, int, "
                   "float, bool, str, ScalarType, Device), not 'Tensr'");
  EXPECT_THROW_MSG(FunctionSchema::parse("h(Tensor self)"), ValueError,
                   "malformed schema for 'h' at column 15: expected '->' and the returns");
  EXPECT_THROW_MSG(FunctionSchema::parse("k(int(a) n) -> Tensor"), ValueError,
                   "expected an alias annotation only on a Tensor");
  EXPECT_THROW_MSG(FunctionSchema::parse("k(Tensor a, Tensor a) -> Tensor"), ValueError,
                   "argument 'a' named twice");
  EXPECT_THROW_MSG(FunctionSchema::parse("k(Tensor a) -> Tensor x y"), ValueError,
                   "at column 25: expected the end of the schema");
  // Declaring one is an error at load time, naming the op.
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  EXPECT_THROW_MSG(def.def("bad(Tensor self, int) -> Tensor"), ValueError,
                   "malformed schema for 'test::bad' at column 27: expected an argument name");
}

TEST(FunctionSchema, KernelSignatureIsCheckedAtRegistration) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("fits(Tensor self, Scalar alpha) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  EXPECT_THROW_MSG(cpu.impl("fits", wrong_signature), TypeError,
                   "does not fit the schema 'test::fits(Tensor self, Scalar alpha) -> Tensor': "
                   "argument 2 'alpha' is Scalar in the schema but int in C++");
  EXPECT_THROW_MSG(cpu.impl("fits", identity_cpu), TypeError,
                   "1 arguments in C++, 2 in the schema");
  // A kernel registered before its op is declared is checked at the declaration.
  Library early(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  early.impl("later", wrong_signature);
  EXPECT_THROW_MSG(def.def("later(Tensor self) -> Tensor"), TypeError,
                   "the kernel for 'later' on CPU at test/test_dispatch.cpp");
  // A caller's signature too, when it takes its typed handle.
  def.def("typed(Tensor self, int n) -> Tensor");
  EXPECT_THROW_MSG(
      (Dispatcher::singleton().find("test::typed").typed<Tensor(const Tensor&, double)>()),
      TypeError, "argument 2 'n' is int in the schema but float in C++");
}

TEST(OpTable, EveryOpIsDeclaredWithItsCppSignature) {
  for (const auto& n : Dispatcher::singleton().op_names()) {
    if (n.rfind("xten::", 0) != 0) continue;
    const OperatorEntry& e = Dispatcher::singleton().find(n).entry();
    ASSERT_NE(e.signature(), nullptr) << n;
    EXPECT_EQ(e.signature()->mismatch(e.function_schema()), "") << n;
  }
  // The handles call the op without a front end.
  const Tensor a = ones({2});
  EXPECT_EQ(ops::add_Tensor::handle().call(a, a, 3).sum().item<float>(), 8.0f);
  EXPECT_EQ(ops::add_Tensor::handle().name(), "xten::add.Tensor");
  Tensor b = ones({2});
  ops::mul_Tensor_::handle().call(b, full({2}, 5.0));
  EXPECT_EQ(b.sum().item<float>(), 10.0f);
  // A declared signature that does not fit its schema fails at the declaration.
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  EXPECT_THROW_MSG(def.def<Tensor(const Tensor&, double)>("sig2(Tensor self, int n) -> Tensor"),
                   TypeError, "argument 2 'n' is int in the schema but float in C++");
  def.def<Tensor(const Tensor&)>("sig3(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  EXPECT_THROW_MSG(cpu.impl("sig3", wrong_signature), TypeError,
                   "has a C++ signature other than the kernel at");
}

TEST(OpTable, InPlaceMethodsForEveryInPlaceOp) {
  Tensor t = full({3}, 4.0);
  EXPECT_EQ(t.sqrt_().exp2_().log2_().sum().item<float>(), 6.0f);
  EXPECT_TRUE(t.sign_().is_same(t));
  t.add_(1).mul_(2).sub_(1, 2).div_(2).pow_(2);
  EXPECT_EQ(t.select(0, 0).item<float>(), 1.0f);
  Tensor u = arange(4, kFloat);
  u.masked_fill_(u > 1, -1.0).clamp_(-0.5, std::nullopt);
  EXPECT_EQ(u.sum().item<float>(), 0 + 1 - 0.5f - 0.5f);
  EXPECT_EQ(u.to(TensorOptions(kDouble)).dtype(), kDouble);
}

TEST(Resolution, DirectBeatsCompositeBeatsMissing) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("res(Tensor self) -> Tensor");
  Library comp(Library::Kind::Impl, "test", DispatchKey::CompositeImplicit, __FILE__, __LINE__);
  comp.impl("res", triple_composite);
  EXPECT_EQ(call_unary("test::res", ones({1})).item<float>(), 3.0f);  // 2. composite
  {
    Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
    cpu.impl("res", double_cpu);
    EXPECT_EQ(call_unary("test::res", ones({1})).item<float>(), 2.0f);  // 1. direct
    const std::string table = dump_dispatch_table("test::res");
    EXPECT_NE(table.find("CPU          kernel from test/test_dispatch.cpp"), std::string::npos)
        << table;
    EXPECT_NE(table.find("XPU          CompositeImplicit kernel"), std::string::npos) << table;
    // A composite is differentiable through its decomposition: it runs above autograd.
    EXPECT_NE(table.find("AutogradCPU  CompositeImplicit kernel"), std::string::npos) << table;
  }
  EXPECT_EQ(call_unary("test::res", ones({1})).item<float>(), 3.0f);
}

TEST(Resolution, MissingKernelErrorListsRegisteredKeys) {
  // Only CPU has a kernel: an XPU-keyed call must say so (forced with an included key).
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("cpu_only(Tensor self) -> Tensor");
  def.def("composite(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("cpu_only", identity_cpu);
  Library comp(Library::Kind::Impl, "test", DispatchKey::CompositeImplicit, __FILE__, __LINE__);
  comp.impl("composite", [](const Tensor& t) { return call_unary("test::cpu_only", t); });
  Tensor x = ones({1});
  IncludeDispatchKeyGuard xpu(DispatchKey::XPU);
  EXPECT_THROW_MSG(call_unary("test::cpu_only", x), NotImplementedError,
                   "[xten] no kernel for 'cpu_only' on XPU; registered: CPU");
  // A composite op runs on XPU through its CompositeImplicit kernel until it needs a backend.
  EXPECT_THROW_MSG(call_unary("test::composite", x), NotImplementedError,
                   "no kernel for 'cpu_only' on XPU");
}

TEST(Resolution, BoxedFallbackServesEveryOp) {
  // Ops with CPU kernels only: the XPU fallback serves them.
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("axpy(Tensor self, Tensor other, Scalar alpha) -> Tensor");
  def.def("unary(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("axpy", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {
    ExcludeDispatchKeyGuard no_xpu(DispatchKey::XPU);
    return add(a, b, alpha);
  });
  cpu.impl("unary", [](const Tensor& a) {
    ExcludeDispatchKeyGuard no_xpu(DispatchKey::XPU);
    return exp(a);
  });
  std::vector<std::string> seen;
  Library xpu(Library::Kind::Impl, "_", DispatchKey::XPU, __FILE__, __LINE__);
  xpu.fallback([&seen](const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
    seen.push_back(op.entry().display_name());
    // Redispatch the same call to the CPU kernel, boxed.
    op.redispatch_boxed(ks.remove(DispatchKey::XPU), stack);
  });
  Tensor a = ones({2}), z = zeros({1});
  IncludeDispatchKeyGuard g(DispatchKey::XPU);
  // three arguments, boxed and unboxed again
  Tensor r = Dispatcher::singleton()
                 .find("test::axpy")
                 .typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>()
                 .call(a, a, 3);
  Tensor s = call_unary("test::unary", z);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[0], "axpy");
  EXPECT_EQ(seen[1], "unary");
  IncludeDispatchKeyGuard no_more{DispatchKeySet()};
  ExcludeDispatchKeyGuard cpu_now(DispatchKey::XPU);
  EXPECT_EQ(r.sum().item<float>(), 8.0f);
  EXPECT_EQ(s.item<float>(), 1.0f);
}

TEST(Resolution, FallthroughSkipsToTheNextKey) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("ft(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("ft", bump_cpu);
  Library xpu(Library::Kind::Impl, "test", DispatchKey::XPU, __FILE__, __LINE__);
  xpu.impl("ft", KernelFunction::fallthrough());
  Tensor x = ones({1});
  IncludeDispatchKeyGuard g(DispatchKey::XPU);
  EXPECT_EQ(call_unary("test::ft", x).item<float>(), 2.0f);
}

TEST(Resolution, ModeKeyRedispatches) {
  // A kernel on a mode key (what autocast does): exclude itself, call the op again.
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("mode(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("mode", double_cpu);
  Library ac(Library::Kind::Impl, "test", DispatchKey::AutocastCPU, __FILE__, __LINE__);
  ac.impl(
      "mode", +[](const Tensor& t) {
        ExcludeDispatchKeyGuard g(DispatchKey::AutocastCPU);
        return call_unary("test::mode", negate_any(t));
      });
  EXPECT_EQ(call_unary("test::mode", ones({1})).item<float>(), 2.0f);  // autocast key inert
  UnexcludeDispatchKeyGuard on(DispatchKeySet(DispatchKey::AutocastCPU));
  EXPECT_EQ(call_unary("test::mode", ones({1})).item<float>(), -2.0f);
}

TEST(Boxed, CallBoxedRunsUnboxedKernels) {
  OperatorHandle op = Dispatcher::singleton().find("xten::add.Tensor");
  Stack stack{IValue(ones({3})), IValue(full({3}, 2.0)), IValue(Scalar(10))};
  op.call_boxed(&stack);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_EQ(stack[0].get<Tensor>().sum().item<float>(), 63.0f);
  Stack split_stack{IValue(arange(5)), IValue(int64_t{2}), IValue(int64_t{0})};
  Dispatcher::singleton().find("xten::split").call_boxed(&split_stack);
  ASSERT_EQ(split_stack.size(), 1u);
  EXPECT_EQ(split_stack[0].get<std::vector<Tensor>>().size(), 3u);
}

TEST(Registry, EveryOpIsDeclaredWithASchema) {
  auto names = Dispatcher::singleton().op_names();
  EXPECT_GT(names.size(), 100u);
  for (const auto& n : names) {
    OperatorHandle op = Dispatcher::singleton().find(n);
    EXPECT_NE(op.schema().find("->"), std::string::npos) << n;
  }
  EXPECT_EQ(Dispatcher::singleton().find("xten::add.Tensor").schema(),
            "xten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  // Parsed once, at load: in-place ops write self, views alias it.
  const FunctionSchema& add_ =
      Dispatcher::singleton().find("xten::add_.Tensor").entry().function_schema();
  EXPECT_TRUE(add_.writes_argument(0));
  EXPECT_FALSE(add_.writes_argument(1));
  const FunctionSchema& view = Dispatcher::singleton().find("xten::view").entry().function_schema();
  EXPECT_FALSE(view.is_mutable());
  EXPECT_EQ(view.returns()[0].alias->set, view.arguments()[0].alias->set);
}

TEST(Threads, ManyThreadsCallAtOnce) {
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        Tensor a = full({4}, static_cast<double>(t));
        Tensor r = (a + i).sum();
        if (r.item<double>() != 4.0 * (t + i)) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// Note [Errors] in docs/architecture.md: an error inside a composite op names the op the user
// called, then the op inside it that raised it.
TEST(Dispatch, ErrorsNameTheCalledCompositeOp) {
  // cross_entropy -> nll_loss (both composite) -> the check in nll_loss: the outermost wins.
  const Tensor logits = zeros({2, 3});
  EXPECT_THROW_MSG(cross_entropy(logits, tensor(std::vector<int64_t>{0, 5})), IndexError,
                   "[cross_entropy] target 5 is out of bounds for 3 classes (in nll_loss)");
  EXPECT_THROW_MSG(nll_loss(logits, tensor(std::vector<int64_t>{0, 5})), IndexError,
                   "[nll_loss] target 5 is out of bounds for 3 classes");
  // A composite that leaves the check to the op inside.
  EXPECT_THROW_MSG(matmul(ones({2, 3}), ones({2, 3})), ValueError,
                   "[matmul] mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3) (in mm)");
  // The name does not outlive the call: a primitive called next reports itself alone.
  try {
    mm(ones({2, 3}), ones({2, 3}));
    ADD_FAILURE() << "mm did not throw";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[mm] ", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find("(in "), std::string::npos) << e.what();
  }
  // Through the autograd layer, with a gradient-requiring input.
  const Tensor w = ones({3, 2}).requires_grad_();
  EXPECT_THROW_MSG(embedding(w, tensor(std::vector<int64_t>{0, 3})), IndexError,
                   "[embedding] index 3 is out of range for the weight's 3 rows");
}
