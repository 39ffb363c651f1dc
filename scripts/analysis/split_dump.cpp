// Prints a finished train_imdb run's training or validation reviews (its seeded split), one per line:
// the label, a tab, the text with its newlines as spaces. For the analyses of this folder.
// Usage: split_dump RUN train|valid [DATA]   (DATA: the archive; default ../shared/data/...)
#include <iostream>
#include <string>

#include "examples/imdb/data.hpp"
#include "examples/imdb/evaluate.hpp"

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[2]) != "train" && std::string(argv[2]) != "valid")) {
    std::cerr << "usage: split_dump RUN train|valid [DATA]\n";
    return 2;
  }
  const auto run = imdb::load_run(argv[1]);
  const auto raw = imdb::read_data(argc > 3 ? argv[3] : "", true);
  const auto split = imdb::split_of(raw, run.config);
  for (const auto i : std::string(argv[2]) == "train" ? split.train : split.valid) {
    std::string text = raw.reviews.train[i].text;
    for (auto& c : text) c = c == '\n' ? ' ' : c;
    std::cout << raw.reviews.train[i].label << '\t' << text << '\n';
  }
  return 0;
}
