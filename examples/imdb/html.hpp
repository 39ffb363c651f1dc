// The pieces every self-contained HTML page of train_imdb (explain, report) is built from: escaping
// text, embedding data for the page's script, the page frame, and writing the file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "examples/common/markup.hpp"

namespace imdb::html {

// Text for HTML content and attribute values: & < > " ' become entities.
using examples::markup::escape;

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

// Writes `content` to a temporary next to `path` and renames it over `path`; throws
// std::runtime_error naming the path on failure.
void write_file(const std::filesystem::path& path, const std::string& content);

}  // namespace imdb::html
