#include "examples/common/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace examples::html {

std::string script_json(const nlohmann::json& data) {
  const std::string dumped = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Outside strings JSON has none of these characters, so escaping them everywhere is exact.
  return markup::replace_each(dumped, {{'<', "\\u003c"}, {'>', "\\u003e"}, {'&', "\\u0026"}});
}

std::string float32_base64(const std::vector<double>& values) {
  constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes;
  bytes.reserve(values.size() * 4);
  for (const double v : values) {
    const auto f = static_cast<float>(v);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<unsigned char>(bits >> shift));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = std::uint32_t(bytes[i]) << 16;
    if (n > 1) chunk |= std::uint32_t(bytes[i + 1]) << 8;
    if (n > 2) chunk |= bytes[i + 2];
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

double round_significant(double value, int digits) {
  if (value == 0.0 || !std::isfinite(value)) return value;
  return std::stod(fmt::format("{:.{}g}", value, digits));
}

std::string page(std::string_view title, std::string_view style, std::string_view body, std::string_view script) {
  // The error handler comes first so that it also sees errors of the page's own script.
  constexpr std::string_view kErrorHandler = R"(window.onerror = function (message, source, line, column) {
  var root = document.documentElement;
  root.dataset.scriptErrors = String(Number(root.dataset.scriptErrors || 0) + 1);
  var record = function () {
    var div = document.createElement('div');
    div.className = 'script-error';
    div.textContent = 'script error: ' + message + ' (line ' + line + ':' + column + ')';
    document.body.insertBefore(div, document.body.firstChild);
  };
  if (document.body) record(); else document.addEventListener('DOMContentLoaded', record);
};)";
  constexpr std::string_view kBaseStyle = R"(
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1100px;
       padding: 0 1em; color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5em; margin: 0 0 .3em; } h2 { font-size: 1.15em; margin: 1.6em 0 .5em; }
.note { color: #666; font-size: .9em; } .script-error { background: #fdd; color: #900; padding: .4em; }
table { border-collapse: collapse; } td, th { padding: .15em .8em .15em 0; text-align: left; vertical-align: top; }
code { font-size: .92em; }
)";
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n"
      "<script>\n{}\n</script>\n<style>{}{}</style>\n</head>\n<body>\n{}\n<script>\n{}\n</script>\n</body>\n</html>\n",
      escape(title), kErrorHandler, kBaseStyle, style, body, script);
}

}  // namespace examples::html
