/// @file
/// The train layer: checkpoints, the run folder, metrics, progress, Ctrl-C and timing
/// (namespace tapegrad::train).
#pragma once

#include "tapegrad/train/allocator.hpp"
#include "tapegrad/train/calibration.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/progress.hpp"
