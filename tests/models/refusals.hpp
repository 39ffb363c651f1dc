// The check the models' option tests repeat: options with one field changed are refused when the model is
// built, with the message that names the field and the value.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

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

// check_refused for each (change, message) of cases, each from `options` as given.
template <typename Model, typename Options>
void check_each_refused(const Options& options,
                        std::initializer_list<std::pair<std::function<void(Options&)>, std::string>> cases) {
  for (const auto& [change, message] : cases) check_refused<Model>(options, change, message);
}

}  // namespace tapegrad::testing
