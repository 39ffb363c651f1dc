#include "examples/common/flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"

namespace examples {

namespace {

constexpr long double kInfinity = std::numeric_limits<long double>::infinity();

// A bound as the README writes it: an integer in full (2^64 - 1 too), else the shortest decimal.
std::string bound_text(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e20L) {
    if (v < 0) return fmt::format("-{}", static_cast<unsigned long long>(-v));
    return fmt::format("{}", static_cast<unsigned long long>(v));
  }
  return fmt::format("{}", static_cast<double>(v));
}

// "--layers 0 must be positive", "\"heads\" 5000 is above the limit of 1024": the words an integer's
// usual ranges read best in, else the range itself.
std::string out_of_range(const std::string& label, const std::string& value, long double v, const Flag& f) {
  const Range& r = *f.range;
  if (f.integral && !r.or_zero && !r.lo_open && v < r.lo) {
    if (r.lo == 1) return fmt::format("{} {} must be positive", label, value);
    if (r.lo == 0) return fmt::format("{} {} must not be negative", label, value);
  }
  if (f.integral && !r.or_zero && !r.hi_open && v > r.hi && !std::isinf(r.hi)) {
    return fmt::format("{} {} is above the limit of {}", label, value, bound_text(r.hi));
  }
  return fmt::format("{} {} is outside {}", label, value, r.text());
}

// The problem with one flag's value, its range or its choices, named by label.
std::optional<std::string> value_problem(const Flag& f, const void* config, const std::string& label) {
  if (f.range) {
    const std::optional<long double> v = f.number(config);
    if (v && !f.range->contains(*v)) return out_of_range(label, f.text(config), *v, f);
  }
  if (!f.choices.empty()) {
    const std::string value = f.text(config);
    if (std::find(f.choices.begin(), f.choices.end(), value) == f.choices.end()) {
      std::string choices;
      for (const auto& c : f.choices) choices += (choices.empty() ? "" : "|") + c;
      return fmt::format("{} {} is not one of {}", label, value, choices);
    }
  }
  return std::nullopt;
}

// Markdown reads | as a cell's end and <pad> as an HTML tag.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|' || c == '<' || c == '>') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

Range at_least(long double lo) { return {lo, kInfinity, false, true}; }
Range above(long double lo) { return {lo, kInfinity, true, true}; }

bool Range::contains(long double v) const {
  if (std::isnan(v)) return false;
  if (or_zero && v == 0) return true;
  const bool above_lo = lo_open ? v > lo : v >= lo;
  const bool below_hi = hi_open ? v < hi : v <= hi;
  return above_lo && below_hi;
}

std::string Range::text() const {
  const std::string interval =
      fmt::format("{}{}, {}{}", lo_open ? '(' : '[', bound_text(lo), bound_text(hi), hi_open ? ')' : ']');
  return or_zero ? "0 or " + interval : interval;
}

FlagTable::FlagTable(const char* program, int version, Keys keys, std::vector<Group> groups)
    : program_(program), version_(version) {
  for (Group& group : groups) {
    for (Flag& f : group.flags) {
      f.group = group.name;
      if (keys == Keys::underscores && !f.name.empty()) std::replace(f.key.begin(), f.key.end(), '-', '_');
      flags_.push_back(std::move(f));
    }
  }
}

const Flag& FlagTable::at(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (!name.empty() && (f.name == name || f.negation == name)) return f;
  }
  throw std::logic_error(fmt::format("{} has no flag {}", program_, name));
}

void FlagTable::add_options(CLI::App& app, void* config) const {
  std::map<std::string, CLI::App*> groups;
  for (const Flag& f : flags_) {
    if (f.name.empty()) continue;
    CLI::App*& target = groups[f.group];
    if (!target) target = f.group.empty() ? &app : app.add_option_group(f.group);
    const std::string names = f.negation.empty() ? f.name : f.name + ",!" + f.negation;
    CLI::Option* option = f.add(*target, names, config);
    option->description(f.help);
    if ((!f.is_switch || !f.negation.empty()) && f.shown_default.empty()) option->capture_default_str();
  }
}

nlohmann::json FlagTable::write(const void* config) const {
  nlohmann::json json = {{"version", version_}};
  for (const Flag& f : flags_) {
    if (!f.key.empty()) json[f.key] = f.get(config);
  }
  return json;
}

void FlagTable::read(const nlohmann::json& json, void* config) const {
  if (!json.is_object()) throw std::runtime_error(fmt::format("a JSON {}, not an object", json.type_name()));
  // A run is read as the program that wrote it meant it, or not at all: settings whose meaning or
  // default changed between versions are not guessed.
  const auto version = json.find("version");
  if (version == json.end()) {
    throw std::runtime_error(fmt::format(
        "no \"version\": a run of an older {} (version 1), which this one does not read (it reads version {}); "
        "train it anew",
        program_, version_));
  }
  if (!version->is_number_integer() || version->get<std::int64_t>() != version_) {
    const bool newer = version->is_number_integer() && version->get<std::int64_t>() > version_;
    throw std::runtime_error(
        fmt::format("\"version\" {}: a run of {} {}, which this one does not read (it reads version {}){}",
                    tapegrad::clip_for_message(version->dump()), newer ? "a newer" : "an older", program_, version_,
                    newer ? "" : "; train it anew"));
  }
  // A misspelled key would silently leave its setting at the default (a 2-head run loaded as 4 heads).
  for (const auto& item : json.items()) {
    if (item.key() == "version") continue;
    const bool known = std::any_of(flags_.begin(), flags_.end(), [&](const Flag& f) { return f.key == item.key(); });
    if (!known) throw std::runtime_error(fmt::format("unknown key \"{}\"", tapegrad::clip_for_message(item.key())));
  }
  for (const Flag& f : flags_) {
    if (f.key.empty()) continue;
    if (!json.contains(f.key)) throw std::runtime_error(fmt::format("missing key \"{}\"", f.key));
    f.set(json, f.key.c_str(), config);
    if (const auto problem = value_problem(f, config, fmt::format("\"{}\"", f.key))) {
      throw std::runtime_error(*problem);
    }
  }
}

std::optional<std::string> FlagTable::range_problem(const void* config) const {
  for (const Flag& f : flags_) {
    if (f.name.empty()) continue;
    if (auto problem = value_problem(f, config, f.name)) return problem;
  }
  return std::nullopt;
}

void FlagTable::take_saved(void* config, const void* saved, const std::function<bool(const Flag&)>& given) const {
  for (const Flag& f : flags_) {
    // A setting without a flag is the program's to take from the run (what --precision resolved to is
    // checked against the --precision given first).
    if (f.key.empty() || f.name.empty() || f.on_resume == Flag::OnResume::command_line || given(f)) continue;
    f.set(nlohmann::json{{f.key, f.get(saved)}}, f.key.c_str(), config);
  }
}

std::optional<std::string> FlagTable::resume_mismatch(const void* config, const void* saved) const {
  for (const Flag& f : flags_) {
    if (f.name.empty() || f.key.empty() || f.on_resume != Flag::OnResume::kept) continue;
    if (f.get(config) != f.get(saved)) {
      return fmt::format("{} {} differs from {}", f.name, f.text(config), f.text(saved));
    }
  }
  return std::nullopt;
}

std::string FlagTable::markdown(const void* defaults, const std::string& extra_title,
                                const std::function<std::string(const Flag&)>& extra) const {
  const bool more = !extra_title.empty();
  std::string table = more ? fmt::format("| flag | default | what | {} |\n| --- | --- | --- | --- |\n", extra_title)
                           : "| flag | default | what |\n| --- | --- | --- |\n";
  for (const Flag& f : flags_) {
    if (f.name.empty()) continue;
    const std::string names =
        f.negation.empty() ? fmt::format("`{}`", f.name) : fmt::format("`{}`, `{}`", f.name, f.negation);
    std::string shown = f.shown_default;
    if (shown.empty()) shown = f.is_switch ? (f.get(defaults).get<bool>() ? "on" : "off") : f.text(defaults);
    table += fmt::format("| {} | {} | {} |", names, markdown_cell(shown), markdown_cell(f.help));
    if (more) {
      const std::string cell = markdown_cell(extra(f));
      table += cell.empty() ? " |" : fmt::format(" {} |", cell);
    }
    table += '\n';
  }
  return table;
}

bool given_on(const CLI::App& app, const Flag& flag) {
  if (flag.name.empty()) return false;
  const CLI::Option* option = app.get_option_no_throw(flag.name);
  return option != nullptr && option->count() > 0;
}

}  // namespace examples
