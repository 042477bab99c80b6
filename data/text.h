#pragma once
// Text for character-level language models (docs/data.md, "Text"): a corpus read from a folder
// of text files, a tokenizer over its Unicode characters, and random training windows. The
// transformer example trains on Debian's `fortunes` package (scripts/setup.sh installs it).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <xten/core/tensor.h>

namespace xten::data {

// Where Debian's fortunes package installs its text files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

// Every file of `dir` (not its subfolders; symbolic links to files followed) whose name does not
// end in one of `exclude_suffixes`, in byte order of their names, concatenated. For fortunes:
// the .dat index files and the .u8 links go, 2,576,674 bytes stay. ValueError naming the folder
// or file when it cannot be read, or when no file is left.
std::string read_text_corpus(const std::string& dir,
                             const std::vector<std::string>& exclude_suffixes = {".dat", ".u8"});

// A character-level tokenizer: token k is the k-th character of the vocabulary, which holds
// distinct Unicode code points in ascending order (from_text: those of a UTF-8 text; fortunes
// has 113). ValueError for text that is not UTF-8 (naming the byte offset), a character outside
// the vocabulary (naming it and its offset), or an id outside [0, vocab_size()).
class CharTokenizer {
 public:
  CharTokenizer() = default;
  // The vocabulary as given: distinct code points (ValueError otherwise), kept in this order.
  explicit CharTokenizer(std::vector<char32_t> vocab);
  static CharTokenizer from_text(const std::string& utf8);

  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  const std::vector<char32_t>& vocab() const { return vocab_; }
  // int64 [number of characters].
  Tensor encode(const std::string& utf8) const;
  // A 1-D integer tensor of ids (on any device) back to UTF-8.
  std::string decode(const Tensor& ids) const;
  // The vocabulary as int64 [V] code points, for a checkpoint, and back.
  Tensor to_tensor() const;
  static CharTokenizer from_tensor(const Tensor& vocab);

 private:
  std::vector<char32_t> vocab_;
  std::vector<int64_t> id_of_;  // code point -> id, -1 where absent (up to the largest)
};

// (train, validation) views of a 1-D token tensor: the last `validation_fraction` of it (rounded
// down) for validation. ValueError for a fraction outside [0, 1) or a tensor that is not 1-D.
std::pair<Tensor, Tensor> split_tokens(const Tensor& tokens, double validation_fraction = 0.1);

// Random windows of a token sequence for next-token training.
class TextWindows {
 public:
  // tokens: 1-D int64 with at least block_size + 1 of them (ValueError otherwise).
  TextWindows(Tensor tokens, int64_t block_size);
  // `batch_size` windows at starts drawn uniformly from [0, n - block_size - 1] by xten's
  // generator (manual_seed): inputs int64 [batch_size, block_size] and targets, the same windows
  // one token later.
  std::pair<Tensor, Tensor> batch(int64_t batch_size) const;
  int64_t block_size() const { return block_; }
  int64_t num_tokens() const { return tokens_.numel(); }

 private:
  Tensor tokens_;
  int64_t block_;
};

}  // namespace xten::data
