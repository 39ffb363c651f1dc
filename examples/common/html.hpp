// The pieces every self-contained HTML page of the example programs (train_imdb's explain and report,
// train_translate's report) is built from: escaping text, embedding data for the page's script, and
// the page frame. Pages are written with tapegrad::io::write_file_atomically.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "examples/common/markup.hpp"

namespace examples::html {

// Text for HTML content and attribute values: & < > " ' become entities.
using markup::escape;

// `data` as JSON that is safe inside a <script> element: '<', '>' and '&' become \u escapes (so no
// "</script>" or "<!--" can end it early) and invalid UTF-8 (reviews can hold any bytes) becomes U+FFFD.
std::string script_json(const nlohmann::json& data);

// The values as little-endian float32 bytes in base64: a compact, exact way to embed a large table of
// float32 numbers (the page decodes it with atob and a DataView).
std::string float32_base64(const std::vector<double>& values);

// A number rounded to `digits` significant digits, so embedded tables stay small.
double round_significant(double value, int digits);

// A complete page: no external file, no network. Its head installs a window.onerror handler that
// records each script error as a <div class="script-error"> in the body (and counts them in
// <html data-script-errors>), so a test can see them; `script` should end by setting
// document.body.dataset.ok = "1".
std::string page(std::string_view title, std::string_view style, std::string_view body, std::string_view script);

}  // namespace examples::html
