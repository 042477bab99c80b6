// Text corpora, a character tokenizer and training windows (data/text.h; docs/data.md "Text").
#include <dirent.h>
#include <sys/stat.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include <xten/core/error.h>
#include <xten/data/text.h>
#include <xten/dispatch/ops.h>

namespace xten::data {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The code points of UTF-8 text, with the byte offset of each; ValueError at the first byte
// that does not start or continue a well-formed sequence (overlong forms and surrogates too).
std::vector<char32_t> decode_utf8(const std::string& s, const char* op) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = 0;
    char32_t c = 0, min = 0;
    if (b < 0x80) {
      len = 1, c = b;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, c = b & 0x1F, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, c = b & 0x0F, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, c = b & 0x07, min = 0x10000;
    }
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto cb = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      ok = (cb & 0xC0) == 0x80;
      c = (c << 6) | (cb & 0x3F);
    }
    ok = ok && c >= min && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    XTEN_CHECK(ok, ValueError, op, "the text is not UTF-8 at byte {} (0x{:02x})", i,
               static_cast<unsigned>(b));
    out.push_back(c);
    i += static_cast<size_t>(len);
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace

std::string read_text_corpus(const std::string& dir,
                             const std::vector<std::string>& exclude_suffixes) {
  constexpr const char* op = "read_text_corpus";
  DIR* d = opendir(dir.c_str());
  XTEN_CHECK(d != nullptr, ValueError, op, "cannot open the folder '{}': {}", dir,
             std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (std::any_of(exclude_suffixes.begin(), exclude_suffixes.end(),
                    [&](const std::string& s) { return ends_with(name, s); }))
      continue;
    struct stat st {};
    if (stat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) names.push_back(name);
  }
  closedir(d);
  XTEN_CHECK(!names.empty(), ValueError, op, "no text file in '{}'", dir);
  std::sort(names.begin(), names.end());  // byte order
  std::string text;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    std::ifstream f(path, std::ios::binary);
    XTEN_CHECK(f.good(), ValueError, op, "cannot read '{}': {}", path, std::strerror(errno));
    text.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return text;
}

CharTokenizer::CharTokenizer(std::vector<char32_t> vocab) : vocab_(std::move(vocab)) {
  char32_t top = 0;
  for (char32_t c : vocab_) {
    XTEN_CHECK(c <= 0x10FFFF, ValueError, "CharTokenizer", "{} is not a Unicode code point",
               static_cast<uint32_t>(c));
    top = std::max(top, c);
  }
  id_of_.assign(vocab_.empty() ? 0 : static_cast<size_t>(top) + 1, -1);
  for (size_t k = 0; k < vocab_.size(); ++k) {
    int64_t& id = id_of_[static_cast<size_t>(vocab_[k])];
    XTEN_CHECK(id < 0, ValueError, "CharTokenizer", "U+{:04X} is in the vocabulary twice",
               static_cast<uint32_t>(vocab_[k]));
    id = static_cast<int64_t>(k);
  }
}

CharTokenizer CharTokenizer::from_text(const std::string& utf8) {
  const std::vector<char32_t> chars = decode_utf8(utf8, "CharTokenizer");
  const std::set<char32_t> distinct(chars.begin(), chars.end());
  return CharTokenizer(std::vector<char32_t>(distinct.begin(), distinct.end()));
}

Tensor CharTokenizer::encode(const std::string& utf8) const {
  const std::vector<char32_t> chars = decode_utf8(utf8, "encode");
  Tensor out = empty({static_cast<int64_t>(chars.size())}, kLong);
  int64_t* p = static_cast<int64_t*>(out.data_ptr());
  for (size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = chars[i];
    const int64_t id = c < id_of_.size() ? id_of_[static_cast<size_t>(c)] : -1;
    XTEN_CHECK(id >= 0, ValueError, "encode",
               "character U+{:04X} (character {} of the text) is not in the vocabulary of {}",
               static_cast<uint32_t>(c), i, vocab_.size());
    p[i] = id;
  }
  return out;
}

std::string CharTokenizer::decode(const Tensor& ids) const {
  XTEN_CHECK(ids.dim() == 1, ValueError, "decode", "expected a 1-D tensor of ids, got {} dims",
             ids.dim());
  const Tensor c = ids.to(Device("cpu")).to(kLong).contiguous();
  const int64_t* p = static_cast<const int64_t*>(c.data_ptr());
  std::string out;
  for (int64_t i = 0; i < c.numel(); ++i) {
    XTEN_CHECK(p[i] >= 0 && p[i] < vocab_size(), ValueError, "decode",
               "id {} at position {} is outside the vocabulary [0, {})", p[i], i, vocab_size());
    append_utf8(vocab_[static_cast<size_t>(p[i])], out);
  }
  return out;
}

Tensor CharTokenizer::to_tensor() const {
  Tensor t = empty({vocab_size()}, kLong);
  int64_t* p = static_cast<int64_t*>(t.data_ptr());
  for (size_t k = 0; k < vocab_.size(); ++k) p[k] = static_cast<int64_t>(vocab_[k]);
  return t;
}

CharTokenizer CharTokenizer::from_tensor(const Tensor& vocab) {
  XTEN_CHECK(vocab.dim() == 1, ValueError, "CharTokenizer",
             "a vocabulary is a 1-D tensor of code points, got {} dims", vocab.dim());
  const Tensor c = vocab.to(Device("cpu")).to(kLong).contiguous();
  const int64_t* p = static_cast<const int64_t*>(c.data_ptr());
  std::vector<char32_t> v;
  for (int64_t k = 0; k < c.numel(); ++k) {
    XTEN_CHECK(p[k] >= 0 && p[k] <= 0x10FFFF, ValueError, "CharTokenizer",
               "{} is not a Unicode code point", p[k]);
    v.push_back(static_cast<char32_t>(p[k]));
  }
  return CharTokenizer(std::move(v));
}

std::pair<Tensor, Tensor> split_tokens(const Tensor& tokens, double validation_fraction) {
  XTEN_CHECK(tokens.dim() == 1, ValueError, "split_tokens",
             "expected a 1-D tensor of tokens, got {} dims", tokens.dim());
  XTEN_CHECK(validation_fraction >= 0 && validation_fraction < 1, ValueError, "split_tokens",
             "validation_fraction must be in [0, 1), got {}", validation_fraction);
  const int64_t n = tokens.numel();
  const auto val = static_cast<int64_t>(static_cast<double>(n) * validation_fraction);
  return {tokens.narrow(0, 0, n - val), tokens.narrow(0, n - val, val)};
}

TextWindows::TextWindows(Tensor tokens, int64_t block_size)
    : tokens_(std::move(tokens)), block_(block_size) {
  XTEN_CHECK(tokens_.dim() == 1 && tokens_.dtype() == kLong, ValueError, "TextWindows",
             "expected a 1-D int64 tensor of tokens, got {} dims of {}", tokens_.dim(),
             to_string(tokens_.dtype()));
  XTEN_CHECK(block_ > 0, ValueError, "TextWindows", "block_size must be positive, got {}", block_);
  XTEN_CHECK(tokens_.numel() > block_, ValueError, "TextWindows",
             "{} tokens are too few for windows of {} and their next tokens", tokens_.numel(),
             block_);
}

std::pair<Tensor, Tensor> TextWindows::batch(int64_t batch_size) const {
  XTEN_CHECK(batch_size > 0, ValueError, "TextWindows", "batch_size must be positive, got {}",
             batch_size);
  const Tensor starts = randint(0, tokens_.numel() - block_, {batch_size, 1},
                                TensorOptions(kLong).device(tokens_.device()));
  const Tensor index = starts + arange(block_, TensorOptions(kLong).device(tokens_.device()));
  const Tensor x = index_select(tokens_, 0, index.reshape({-1})).view({batch_size, block_});
  const Tensor y = index_select(tokens_, 0, (index + 1).reshape({-1})).view({batch_size, block_});
  return {x, y};
}

}  // namespace xten::data
