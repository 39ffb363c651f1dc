/// @file
/// Writing a run's text files (config.json, metrics.jsonl on --resume, report pages) so that a crash
/// or a kill leaves either the old file or the new one, never a truncated mix, and no temporary file
/// of a killed save outlives the next save: io::write_file_atomically, under the train layer's name.
#pragma once

#include "tapegrad/io/atomic_file.hpp"

namespace tapegrad::train {

using io::write_file_atomically;

}  // namespace tapegrad::train
