/// @file
/// The train layer: checkpoints, model files, the run folder, the training loop, metrics, progress,
/// Ctrl-C, exit codes and timing (namespace tapegrad::train).
#pragma once

#include "tapegrad/train/calibration.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/checksum.hpp"
#include "tapegrad/train/divergence.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/micro_batch.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tapegrad/train/timing.hpp"
