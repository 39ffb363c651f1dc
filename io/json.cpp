#include "tapegrad/io/json.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"

namespace tapegrad::io {

namespace {

// Thrown by the parser callback when the nesting passes the limit.
struct TooDeep {};

}  // namespace

nlohmann::json parse_json(std::string_view text, int max_depth) {
  try {
    return nlohmann::json::parse(text, [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
      if (depth >= max_depth && (event == nlohmann::json::parse_event_t::object_start ||
                                 event == nlohmann::json::parse_event_t::array_start)) {
        throw TooDeep{};
      }
      return true;
    });
  } catch (const TooDeep&) {
    throw std::runtime_error(fmt::format("nests arrays or objects deeper than {} levels", max_depth));
  } catch (const nlohmann::json::exception& e) {  // syntax errors, numbers beyond double's range
    throw std::runtime_error(fmt::format("is not valid JSON: {}", clip_for_message(e.what(), 200)));
  }
}

}  // namespace tapegrad::io
