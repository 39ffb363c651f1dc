/// @file
/// The distributed layer: data-parallel training on MPI (namespace tapegrad::distributed). Built only
/// when CMake finds MPI; link tapegrad::distributed.
#pragma once

#include "tapegrad/distributed/bucket_reduction.hpp"
#include "tapegrad/distributed/checkpoint.hpp"
#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/partition.hpp"
#include "tapegrad/distributed/sampler.hpp"
#include "tapegrad/distributed/sharded_gradients.hpp"
#include "tapegrad/distributed/trainer.hpp"
#include "tapegrad/distributed/zero_redundancy_optimizer.hpp"
