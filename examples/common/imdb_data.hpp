// Where the programs that read IMDb (train_imdb, train_lm) look for it: their --data flag,
// TAPEGRAD_DATA, a copy shared between checkouts (../shared/data/aclImdb_labeled.tar.gz beside the
// source tree), data/ in the working directory and the user's cache, in that order
// (datasets::locate_imdb), downloading into the cache unless told not to.
#pragma once

#include <string>

#include "tapegrad/datasets/imdb/locate.hpp"

namespace examples {

// data_flag: --data, empty when not given; no_download: --no-download.
tapegrad::datasets::LocateOptions imdb_locate_options(const std::string& data_flag, bool no_download);

}  // namespace examples
