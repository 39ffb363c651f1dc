// train_imdb's pages are built from the examples' shared HTML pieces (examples/common/html.hpp).
#pragma once

#include "examples/common/html.hpp"

namespace imdb {
namespace html = ::examples::html;
}  // namespace imdb
