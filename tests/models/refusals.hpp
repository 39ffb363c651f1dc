// The check the models' option tests repeat: options with one field changed are refused when the model is
// built, with the message that names the field and the value.
#pragma once

#include <catch2/catch.hpp>

#include "tapegrad/autograd/generator.hpp"

namespace tapegrad::testing {

// Building Model from `options` after change(options) throws with message, matched as Catch matches it
// (a string in full; Catch::Contains for a part).
template <typename Model, typename Options, typename Change, typename Message>
void check_refused(Options options, Change change, const Message& message) {
  change(options);
  Generator gen(0);
  CHECK_THROWS_WITH(Model(options, gen), message);
}

}  // namespace tapegrad::testing
