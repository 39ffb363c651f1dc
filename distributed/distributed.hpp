/// @file
/// The distributed layer: data-parallel training on MPI (namespace tapegrad::distributed). Built only
/// when CMake finds MPI; link tapegrad::distributed.
#pragma once

#include "tapegrad/distributed/checkpoint.hpp"
#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/sampler.hpp"
#include "tapegrad/distributed/trainer.hpp"
