// libFuzzer target: train_translate's configuration reader (the JSON a checkpoint's metadata holds)
// on arbitrary text. Contract: Config::from_json throws std::runtime_error, validate()
// std::invalid_argument; nothing else escapes.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "examples/translate/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    translate::Config::from_json(text).validate();
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
