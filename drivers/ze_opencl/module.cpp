// Modules and kernels of the ze_opencl driver. PoCL takes SPIR (LLVM bitcode), not SPIR-V, so
// a module's SPIR-V is translated by llvm-spirv in a child process (a bad module must give
// MODULE_BUILD_FAILURE with a log, and the translator library may exit() on bad input), and
// the result is kept in a cache keyed by the SPIR-V's hash so that the next run skips it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ze_opencl.h"

extern char** environ;

using namespace ze_opencl;

namespace {

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return true;
}

bool write_file(const std::string& path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  return static_cast<bool>(f);
}

// A cache entry: "ZOCB", the bitcode's size and FNV-1a hash (8 bytes each), then the bitcode.
// An entry that does not check out (truncated, corrupted, another format) is never loaded: the
// module is translated again and the entry rewritten.
constexpr size_t kEntryHeader = 20;

bool read_entry(const std::string& path, std::string* bitcode) {
  std::string raw;
  if (!read_file(path, &raw) || raw.size() <= kEntryHeader || raw.compare(0, 4, "ZOCB") != 0)
    return false;
  uint64_t size = 0, hash = 0;
  std::memcpy(&size, raw.data() + 4, 8);
  std::memcpy(&hash, raw.data() + 12, 8);
  const auto* body = reinterpret_cast<const uint8_t*>(raw.data() + kEntryHeader);
  if (size != raw.size() - kEntryHeader || fnv1a(body, size) != hash) return false;
  *bitcode = raw.substr(kEntryHeader);
  return true;
}

std::string entry_bytes(const std::string& bitcode) {
  const uint64_t size = bitcode.size();
  const uint64_t hash = fnv1a(reinterpret_cast<const uint8_t*>(bitcode.data()), size);
  std::string raw = "ZOCB";
  raw.append(reinterpret_cast<const char*>(&size), 8);
  raw.append(reinterpret_cast<const char*>(&hash), 8);
  return raw + bitcode;
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

// SPIR-V -> SPIR 1.2 bitcode in a child process; false with *log set on failure.
bool translate(const uint8_t* spirv, size_t n, std::string* bitcode, std::string* log) {
  if (n < 20 || n % 4 != 0) {
    *log = "ze_opencl: input is not a SPIR-V module (size " + std::to_string(n) + " bytes)";
    return false;
  }
  uint32_t magic;
  std::memcpy(&magic, spirv, 4);
  if (magic != 0x07230203u) {
    *log = "ze_opencl: input is not a SPIR-V module (bad magic number)";
    return false;
  }
  const std::string& dir = settings().cache_dir;
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(fnv1a(spirv, n)));
  const std::string cached = dir + "/" + name + "-" + std::to_string(n) + ".bc";
  if (!dir.empty() && read_entry(cached, bitcode)) return true;

  char tmpl[] = "/tmp/ze_opencl_XXXXXX";
  if (!mkdtemp(tmpl)) {
    *log = "ze_opencl: cannot create a temporary folder";
    return false;
  }
  const std::string tmp = tmpl, in = tmp + "/in.spv", out = tmp + "/out.bc", err = tmp + "/log.txt";
  bool ok = write_file(in, spirv, n);
  if (ok) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<std::string> argv_s = {
        settings().translator, "-r", "--spirv-target-env=CL1.2", in, "-o", out};
    std::vector<char*> argv;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t pid;
    int status = 0;
    if (posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
      *log = "ze_opencl: cannot run the SPIR-V translator '" + settings().translator +
             "' (set ZE_OPENCL_SPIRV_TRANSLATOR)";
      ok = false;
    } else {
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && read_file(out, bitcode) &&
           !bitcode->empty();
      if (!ok) {
        read_file(err, log);
        const std::string how = WIFEXITED(status)
                                    ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                    : "was killed by signal " + std::to_string(WTERMSIG(status));
        *log = "ze_opencl: SPIR-V translation failed: '" + settings().translator + "' " + how +
               (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? " without writing bitcode" : "") +
               ": " + (log->empty() ? std::string("(no output)") : *log);
      }
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  unlink(in.c_str());
  unlink(out.c_str());
  unlink(err.c_str());
  rmdir(tmp.c_str());
  if (ok && !dir.empty()) {  // write then rename: concurrent processes never read half a file
    make_dirs(dir);
    const std::string part = cached + "." + std::to_string(getpid()) + ".part";
    const std::string raw = entry_bytes(*bitcode);
    errno = 0;
    if (write_file(part, raw.data(), raw.size()) && std::rename(part.c_str(), cached.c_str()) == 0)
      return ok;
    const int err = errno;
    unlink(part.c_str());
    // Still usable without a cache: say so once per process, naming the folder and the cause.
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "ze_opencl: cannot write the module cache in '%s' (%s); modules are "
                   "translated again in every process (set ZE_OPENCL_CACHE_DIR)\n",
                   dir.c_str(), err ? std::strerror(err) : "write failed");
  }
  return ok;
}

std::string build_log(cl_program p, cl_device_id d) {
  size_t n = 0;
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

// Which kernel parameters are pointers to global/constant memory or local buffers: OpenCL's
// clGetKernelArgInfo answers only for programs built from source, so it is read from the
// SPIR-V itself (pointer types' storage classes of each entry point's parameters).
std::map<std::string, std::vector<cl_kernel_arg_address_qualifier>> parse_kernel_params(
    const uint8_t* bytes, size_t n) {
  std::vector<uint32_t> w(n / 4);
  std::memcpy(w.data(), bytes, w.size() * 4);
  enum : uint32_t {
    kOpEntryPoint = 15,
    kOpTypePointer = 32,
    kOpFunction = 54,
    kOpFunctionParameter = 55
  };
  std::map<uint32_t, uint32_t> pointer_class;  // type id -> storage class
  std::map<uint32_t, std::string> entry_name;  // function id -> kernel name
  std::map<std::string, std::vector<cl_kernel_arg_address_qualifier>> out;
  std::vector<cl_kernel_arg_address_qualifier>* params = nullptr;
  for (size_t i = 5; i < w.size();) {
    const uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > w.size()) break;
    if (op == kOpEntryPoint && count >= 4) {
      entry_name[w[i + 2]] = reinterpret_cast<const char*>(&w[i + 3]);
    } else if (op == kOpTypePointer && count >= 4) {
      pointer_class[w[i + 1]] = w[i + 2];
    } else if (op == kOpFunction && count >= 5) {
      auto it = entry_name.find(w[i + 2]);
      params = it == entry_name.end() ? nullptr : &out[it->second];
    } else if (op == kOpFunctionParameter && params && count >= 3) {
      auto it = pointer_class.find(w[i + 1]);
      cl_kernel_arg_address_qualifier q = CL_KERNEL_ARG_ADDRESS_PRIVATE;
      if (it != pointer_class.end()) {
        if (it->second == 4)
          q = CL_KERNEL_ARG_ADDRESS_LOCAL;  // Workgroup
        else if (it->second == 0)
          q = CL_KERNEL_ARG_ADDRESS_CONSTANT;  // UniformConstant
        else if (it->second == 5 || it->second == 8)
          q = CL_KERNEL_ARG_ADDRESS_GLOBAL;
      }
      params->push_back(q);
    }
    i += count;
  }
  return out;
}

void give_log(ze_module_build_log_handle_t* out, std::string text) {
  if (out) *out = new _ze_module_build_log_handle_t{std::move(text)};
}

}  // namespace

ze_result_t zoModuleCreate(ze_context_handle_t c, ze_device_handle_t d,
                           const ze_module_desc_t* desc, ze_module_handle_t* out,
                           ze_module_build_log_handle_t* log_out) {
  if (!c || !d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (log_out) *log_out = nullptr;
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!desc->pInputModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (desc->pConstants && desc->pConstants->numConstants > 0)
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  std::string bitcode, log;
  if (!translate(desc->pInputModule, desc->inputSize, &bitcode, &log)) {
    give_log(log_out, log);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  const size_t len = bitcode.size();
  const auto* bin = reinterpret_cast<const unsigned char*>(bitcode.data());
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(c->cl, 1, &d->cl, &len, &bin, &status, &err);
  if (err != CL_SUCCESS) {
    give_log(log_out, "ze_opencl: OpenCL rejected the translated module (error " +
                          std::to_string(err) + ")");
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  err =
      clBuildProgram(prog, 1, &d->cl, desc->pBuildFlags ? desc->pBuildFlags : "", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    give_log(log_out, "ze_opencl: build failed (error " + std::to_string(err) +
                          "): " + build_log(prog, d->cl));
    clReleaseProgram(prog);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  give_log(log_out, build_log(prog, d->cl));
  auto* m = new _ze_module_handle_t{
      c, d, prog, {}, parse_kernel_params(desc->pInputModule, desc->inputSize)};
  size_t n = 0;
  clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &n);
  std::string names(n, '\0');
  clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, n, names.data(), nullptr);
  std::stringstream ss(names.c_str());
  for (std::string k; std::getline(ss, k, ';');)
    if (!k.empty()) m->kernel_names.push_back(k);
  *out = m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoModuleDestroy(ze_module_handle_t m) {
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  clReleaseProgram(m->program);
  delete m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoModuleBuildLogDestroy(ze_module_build_log_handle_t l) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoModuleBuildLogGetString(ze_module_build_log_handle_t l, size_t* size, char* out) {
  if (!l) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!out) {
    *size = l->text.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  const size_t n = std::min(*size ? *size - 1 : 0, l->text.size());
  std::memcpy(out, l->text.data(), n);
  if (*size) out[n] = '\0';
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoModuleGetKernelNames(ze_module_handle_t m, uint32_t* count, const char** names) {
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const uint32_t n = static_cast<uint32_t>(m->kernel_names.size());
  if (*count == 0 || !names) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, n);
  for (uint32_t i = 0; i < *count; ++i) names[i] = m->kernel_names[i].c_str();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelCreate(ze_module_handle_t m, const ze_kernel_desc_t* desc,
                           ze_kernel_handle_t* out) {
  if (!m) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out || !desc->pKernelName) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (std::find(m->kernel_names.begin(), m->kernel_names.end(), desc->pKernelName) ==
      m->kernel_names.end())
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(m->program, desc->pKernelName, &err);
  if (err != CL_SUCCESS) return from_cl(err);
  auto* kh = new _ze_kernel_handle_t;
  kh->module = m;
  kh->cl = k;
  kh->name = desc->pKernelName;
  cl_uint nargs = 0;
  clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr);
  kh->args.resize(nargs);
  kh->address_spaces = m->kernel_params[kh->name];
  kh->address_spaces.resize(nargs, CL_KERNEL_ARG_ADDRESS_PRIVATE);
  size_t wg = 1;
  clGetKernelWorkGroupInfo(k, m->device->cl, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr);
  kh->max_group_size = wg;
  *out = kh;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelDestroy(ze_kernel_handle_t k) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  clReleaseKernel(k->cl);
  delete k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelSetGroupSize(ze_kernel_handle_t k, uint32_t x, uint32_t y, uint32_t z) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (x == 0 || y == 0 || z == 0 || static_cast<uint64_t>(x) * y * z > k->max_group_size)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  std::lock_guard<std::mutex> lock(k->mutex);
  k->group[0] = x;
  k->group[1] = y;
  k->group[2] = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelSetIndirectAccess(ze_kernel_handle_t k, ze_kernel_indirect_access_flags_t f) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  constexpr ze_kernel_indirect_access_flags_t kAll = ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST |
                                                     ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE |
                                                     ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED;
  if (f & ~kAll) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  std::lock_guard<std::mutex> lock(k->mutex);
  k->indirect_access = f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelGetIndirectAccess(ze_kernel_handle_t k, ze_kernel_indirect_access_flags_t* f) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!f) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(k->mutex);
  *f = k->indirect_access;
  return ZE_RESULT_SUCCESS;
}

// Few, stable sizes: PoCL compiles a kernel again for every work-group size it meets, so the
// suggestion is the largest power of two up to 256 (64 per extra dimension) dividing each extent.
ze_result_t zoKernelSuggestGroupSize(ze_kernel_handle_t k, uint32_t gx, uint32_t gy, uint32_t gz,
                                     uint32_t* x, uint32_t* y, uint32_t* z) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!x || !y || !z) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto pick = [](uint32_t extent, uint32_t cap) {
    uint32_t s = cap;
    while (s > 1 && extent % s != 0) s /= 2;
    return s;
  };
  const uint32_t cap = static_cast<uint32_t>(std::min<size_t>(256, k->max_group_size));
  *x = pick(gx, cap);
  *y = pick(gy, std::max<uint32_t>(1, std::min<uint32_t>(64, cap / *x)));
  *z = pick(gz, std::max<uint32_t>(1, std::min<uint32_t>(64, cap / (*x * *y))));
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelSetArgumentValue(ze_kernel_handle_t k, uint32_t index, size_t size,
                                     const void* value) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (index >= k->args.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  KernelArg a;
  switch (k->address_spaces[index]) {
    case CL_KERNEL_ARG_ADDRESS_LOCAL:
      if (value || size == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
      a.kind = KernelArg::kLocal;
      a.local_size = size;
      break;
    case CL_KERNEL_ARG_ADDRESS_GLOBAL:
    case CL_KERNEL_ARG_ADDRESS_CONSTANT:
      if (size != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      a.kind = KernelArg::kPointer;
      if (value) std::memcpy(&a.pointer, value, sizeof(void*));  // null value: a null pointer
      break;
    default:
      if (!value) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
      a.kind = KernelArg::kValue;
      a.bytes.assign(static_cast<const uint8_t*>(value), static_cast<const uint8_t*>(value) + size);
      break;
  }
  // Check the size against OpenCL's view of the parameter now, not at launch.
  std::lock_guard<std::mutex> lock(k->mutex);
  if (a.kind == KernelArg::kValue) {
    if (cl_int err = clSetKernelArg(k->cl, index, size, value); err != CL_SUCCESS)
      return from_cl(err);
  }
  k->args[index] = std::move(a);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelGetProperties(ze_kernel_handle_t k, ze_kernel_properties_t* p) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  cl_device_id d = k->module->device->cl;
  size_t req[3] = {0, 0, 0};
  clGetKernelWorkGroupInfo(k->cl, d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof(req), req, nullptr);
  cl_ulong local = 0, priv = 0;
  clGetKernelWorkGroupInfo(k->cl, d, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local), &local, nullptr);
  clGetKernelWorkGroupInfo(k->cl, d, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof(priv), &priv, nullptr);
  p->numKernelArgs = static_cast<uint32_t>(k->args.size());
  p->requiredGroupSizeX = static_cast<uint32_t>(req[0]);
  p->requiredGroupSizeY = static_cast<uint32_t>(req[1]);
  p->requiredGroupSizeZ = static_cast<uint32_t>(req[2]);
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = 1;
  p->maxNumSubgroups = static_cast<uint32_t>(k->max_group_size);
  p->localMemSize = static_cast<uint32_t>(local);
  p->privateMemSize = static_cast<uint32_t>(priv);
  p->spillMemSize = 0;
  std::memset(p->uuid.kid, 0, ZE_MAX_KERNEL_UUID_SIZE);
  std::memset(p->uuid.mid, 0, ZE_MAX_MODULE_UUID_SIZE);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoKernelGetName(ze_kernel_handle_t k, size_t* size, char* name) {
  if (!k) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!size) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!name) {
    *size = k->name.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  const size_t n = std::min(*size ? *size - 1 : 0, k->name.size());
  std::memcpy(name, k->name.data(), n);
  if (*size) name[n] = '\0';
  return ZE_RESULT_SUCCESS;
}
