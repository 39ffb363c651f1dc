#include "examples/common/imdb_data.hpp"

#include <filesystem>

#ifndef TAPEGRAD_SOURCE_DIR
#error "TAPEGRAD_SOURCE_DIR must name the repository root (where ../shared/data is looked for)"
#endif

namespace examples {

tapegrad::datasets::LocateOptions imdb_locate_options(const std::string& data_flag, bool no_download) {
  auto options = tapegrad::datasets::LocateOptions::from_environment();
  if (!data_flag.empty()) options.explicit_path = data_flag;
  const auto shared = (std::filesystem::path(TAPEGRAD_SOURCE_DIR) / ".." / "shared" / "data" / "aclImdb_labeled.tar.gz")
                          .lexically_normal();
  options.places.push_back({shared, "the shared data next to the repository"});
  options.download = !no_download;
  return options;
}

}  // namespace examples
