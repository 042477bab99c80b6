// The safetensors format, read and written with nlohmann::json (Debian's nlohmann-json3-dev, a
// well-kept parser instead of one written here). Note [Reading untrusted files]: the header size
// is checked against the file's size before anything is allocated; every entry's dtype, shape
// and offsets are checked (sizes that overflow, offsets outside the data, overlapping ranges,
// byte counts that disagree with the shape) before any tensor is made.
#include <xten/serialize/serialize.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include <xten/core/device_interface.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;  // safetensors' own limit
const char* kDevicePrefix = "xten.device.";

struct DtypeName {
  ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {kBool, "BOOL"}, {kByte, "U8"},  {kChar, "I8"},       {kShort, "I16"}, {kInt, "I32"},
    {kLong, "I64"},  {kHalf, "F16"}, {kBFloat16, "BF16"}, {kFloat, "F32"}, {kDouble, "F64"}};

const char* safetensors_name(ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.name;
  XTEN_FAIL(NotImplementedError, "save", "dtype {} has no safetensors name", to_string(t));
}

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  XTEN_FAIL(ValueError, "load", "'{}' is not a valid safetensors file: {}", path, what);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  XTEN_CHECK(in.good(), ValueError, "load", "cannot open '{}'", path);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0);
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(size, 0)), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  XTEN_CHECK(in.good() || bytes.empty(), ValueError, "load", "cannot read '{}'", path);
  return bytes;
}

struct Parsed {
  json header;
  std::string bytes;
  size_t data_start = 0;
};

Parsed parse(const std::string& path) {
  Parsed p;
  p.bytes = read_file(path);
  if (p.bytes.size() < 8)
    bad_file(path, fmt::format("{} bytes, shorter than the 8-byte header size", p.bytes.size()));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(p.bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeaderBytes || n > p.bytes.size() - 8)
    bad_file(path,
             fmt::format("the header size {} exceeds the file ({} bytes)", n, p.bytes.size()));
  p.header = json::parse(p.bytes.begin() + 8, p.bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n),
                         nullptr, /*allow_exceptions=*/false);
  if (p.header.is_discarded() || !p.header.is_object())
    bad_file(path, "the header is not a JSON object");
  p.data_start = 8 + static_cast<size_t>(n);
  return p;
}

struct Entry {
  std::string name;
  ScalarType dtype;
  DimVector shape;
  uint64_t begin, end;
};

std::vector<Entry> entries(const std::string& path, const Parsed& p) {
  const uint64_t data_size = p.bytes.size() - p.data_start;
  std::vector<Entry> r;
  for (const auto& [name, v] : p.header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) bad_file(path, "__metadata__ is not an object");
      for (const auto& [k, s] : v.items())
        if (!s.is_string()) bad_file(path, fmt::format("metadata '{}' is not a string", k));
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets"))
      bad_file(path, fmt::format("tensor '{}' lacks dtype, shape or data_offsets", name));
    const json& dt = v["dtype"];
    const json& shape = v["shape"];
    const json& off = v["data_offsets"];
    Entry e{name, ScalarType::Undefined, {}, 0, 0};
    if (dt.is_string())
      for (const auto& d : kDtypes)
        if (dt.get<std::string>() == d.name) e.dtype = d.type;
    if (e.dtype == ScalarType::Undefined)
      bad_file(path, fmt::format("tensor '{}' has an unknown dtype {}", name, dt.dump()));
    if (!shape.is_array()) bad_file(path, fmt::format("tensor '{}': shape is not a list", name));
    uint64_t numel = 1;
    for (const json& s : shape) {
      if (!s.is_number_unsigned() || s.get<uint64_t>() > (uint64_t{1} << 48))
        bad_file(path, fmt::format("tensor '{}' has a bad shape {}", name, shape.dump()));
      const uint64_t d = s.get<uint64_t>();
      if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / d)
        bad_file(path, fmt::format("tensor '{}': shape {} overflows", name, shape.dump()));
      numel *= d;
      e.shape.push_back(static_cast<int64_t>(d));
    }
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      bad_file(path, fmt::format("tensor '{}': data_offsets must be two offsets", name));
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size)
      bad_file(path, fmt::format("tensor '{}': data_offsets [{}, {}] outside the data ({} bytes)",
                                 name, e.begin, e.end, data_size));
    const uint64_t esize = element_size(e.dtype);
    if (numel > std::numeric_limits<uint64_t>::max() / esize || e.end - e.begin != numel * esize)
      bad_file(path, fmt::format("tensor '{}': {} bytes for shape {} of {}", name, e.end - e.begin,
                                 shape.dump(), safetensors_name(e.dtype)));
    r.push_back(std::move(e));
  }
  // Ranges must not overlap; the file order is the order of the data.
  std::sort(r.begin(), r.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  for (size_t i = 1; i < r.size(); ++i)
    if (r[i].begin < r[i - 1].end)
      bad_file(path, fmt::format("tensors '{}' and '{}' overlap", r[i - 1].name, r[i].name));
  return r;
}

}  // namespace

void save(const NamedTensorList& tensors, const std::string& path, const Metadata& metadata) {
  json header = json::object();
  json meta = json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    XTEN_CHECK(t.defined(), ValueError, "save", "tensor '{}' is undefined", name);
    XTEN_CHECK(!t.is_quantized(), NotImplementedError, "save",
               "tensor '{}' is quantized ({}): quantized checkpoints are not supported yet; save "
               "the float model and quantize after loading (docs/quantization.md)",
               name, dtype_name(t.dtype()));
    XTEN_CHECK(name != "__metadata__" && !header.contains(name), ValueError, "save",
               "the name '{}' is reserved or repeated", name);
    const Tensor h = t.detach().to(Device("cpu")).contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(h.numel()) * element_size(h.dtype());
    json entry = json::object();
    entry["dtype"] = safetensors_name(h.dtype());
    entry["shape"] = std::vector<int64_t>(h.sizes().begin(), h.sizes().end());
    entry["data_offsets"] = std::vector<uint64_t>{offset, offset + nbytes};
    header[name] = entry;
    if (t.device().type() != kCPU) meta[kDevicePrefix + name] = t.device().str();
    offset += nbytes;
    host.push_back(h);
  }
  if (!meta.empty()) header["__metadata__"] = meta;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data 8-byte aligned, as safetensors pads
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  XTEN_CHECK(out.good(), ValueError, "save", "cannot open '{}' for writing", path);
  unsigned char size[8];
  for (int i = 0; i < 8; ++i) size[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(size), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const Tensor& h : host) {
    const int64_t nbytes = h.numel() * static_cast<int64_t>(element_size(h.dtype()));
    if (nbytes > 0)  // an empty tensor may have no memory (a null pointer)
      out.write(static_cast<const char*>(h.data_ptr()), static_cast<std::streamsize>(nbytes));
  }
  XTEN_CHECK(out.good(), ValueError, "save", "writing '{}' failed", path);
}

void save(const Tensor& tensor, const std::string& path) {
  save(NamedTensorList{{"tensor", tensor}}, path);
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  NamedTensorList named;
  for (size_t i = 0; i < tensors.size(); ++i) named.emplace_back(std::to_string(i), tensors[i]);
  save(named, path);
}

NamedTensorList load(const std::string& path) {
  const Parsed p = parse(path);
  const std::vector<Entry> list = entries(path, p);
  Metadata devices;
  if (p.header.contains("__metadata__"))
    for (const auto& [k, v] : p.header["__metadata__"].items())
      if (k.rfind(kDevicePrefix, 0) == 0) devices[k.substr(std::strlen(kDevicePrefix))] = v;
  NamedTensorList r;
  for (const Entry& e : list) {
    Tensor t = empty(e.shape, TensorOptions(e.dtype, Device("cpu")));
    if (e.end > e.begin)
      std::memcpy(t.data_ptr(), p.bytes.data() + p.data_start + e.begin, e.end - e.begin);
    auto dev = devices.find(e.name);
    if (dev != devices.end()) {
      Device d("cpu");
      try {
        d = Device(dev->second);
      } catch (const Error&) {
        bad_file(path, fmt::format("tensor '{}' has a bad device '{}'", e.name, dev->second));
      }
      // The recorded device, where this machine has it (else the tensor stays on the CPU).
      if (d.type() != kCPU && has_device_interface(d.type()) &&
          d.index() < device_interface(d.type()).device_count())
        t = t.to(d);
    }
    r.emplace_back(e.name, std::move(t));
  }
  return r;
}

Metadata load_metadata(const std::string& path) {
  const Parsed p = parse(path);
  entries(path, p);
  Metadata m;
  if (p.header.contains("__metadata__"))
    for (const auto& [k, v] : p.header["__metadata__"].items())
      if (k.rfind(kDevicePrefix, 0) != 0) m[k] = v;
  return m;
}

Tensor load_tensor(const std::string& path) {
  for (auto& [n, t] : load(path))
    if (n == "tensor") return t;
  XTEN_FAIL(ValueError, "load_tensor", "'{}' holds no tensor named 'tensor'", path);
}

std::vector<Tensor> load_tensors(const std::string& path) {
  NamedTensorList all = load(path);
  std::vector<Tensor> r(all.size());
  for (auto& [n, t] : all) {
    size_t i = 0;
    try {
      i = std::stoul(n);
    } catch (const std::exception&) {
      XTEN_FAIL(ValueError, "load_tensors", "'{}' holds '{}', not a list index", path, n);
    }
    XTEN_CHECK(i < r.size() && !r[i].defined(), ValueError, "load_tensors",
               "'{}': list index {} is out of range or repeated", path, i);
    r[i] = t;
  }
  return r;
}

NamedTensorList with_prefix(const std::string& prefix, const NamedTensorList& tensors) {
  NamedTensorList r;
  for (const auto& [n, t] : tensors) r.emplace_back(prefix + n, t);
  return r;
}

NamedTensorList under_prefix(const std::string& prefix, const NamedTensorList& tensors) {
  NamedTensorList r;
  for (const auto& [n, t] : tensors)
    if (n.rfind(prefix, 0) == 0) r.emplace_back(n.substr(prefix.size()), t);
  return r;
}

}  // namespace xten
