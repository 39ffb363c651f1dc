// A program's settings declared once, a row per flag: its name, the field of the settings struct it sets
// (whose value in a default-constructed struct is the default), its help, range or choices, whether
// config.json saves it and whether --resume may change it. The one table drives the command line,
// config.json (written with a version, read strictly), the range checks, --resume and the README's table.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "examples/common/settings.hpp"

namespace examples {

/// The range of a numeric flag, written as examples/README.md writes it: "[1, 256]", "(0, 1)",
/// "[0, inf)", "0 or [2, 100000000]". long double holds every 64-bit integer exactly.
struct Range {
  long double lo = 0, hi = 0;  ///< hi may be infinity
  bool lo_open = false, hi_open = false;
  bool or_zero = false;  ///< 0 is accepted besides the interval
  bool contains(long double value) const;
  std::string text() const;
};
inline Range closed(long double lo, long double hi) { return {lo, hi}; }                       ///< [lo, hi]
inline Range below(long double lo, long double hi) { return {lo, hi, false, true}; }           ///< [lo, hi)
inline Range between(long double lo, long double hi) { return {lo, hi, true, true}; }          ///< (lo, hi)
Range at_least(long double lo);                                                                ///< [lo, inf)
Range above(long double lo);                                                                   ///< (lo, inf)
inline Range zero_or(long double lo, long double hi) { return {lo, hi, false, false, true}; }  ///< 0 or [lo, hi]

/// One setting: a flag, or a value config.json saves that no flag sets (name empty). Bound to the
/// settings struct through type-erased accessors (void*: the struct of the table it belongs to).
struct Flag {
  std::string name;           ///< "--d-model"; empty: saved, set by the program
  std::string negation;       ///< "--no-wide-nb": a switch's off form, if it has one
  std::string key;            ///< config.json's key; empty: not saved
  std::string help;           ///< --help's and the README's
  std::string group;          ///< its section of --help
  std::string shown_default;  ///< the README's default where the value does not say it ("found")
  std::optional<Range> range;
  std::vector<std::string> choices;
  /// On --resume a saved flag is the run's, and given it must agree (kept); or the run's unless given
  /// otherwise (may_change: the data may have moved, the thread count changes no result); or the
  /// command line's (command_line: the run folder itself).
  enum class OnResume { kept, may_change, command_line };
  OnResume on_resume = OnResume::kept;
  bool is_switch = false;
  bool integral = false;

  /// Adds the option `names` ("--wide-nb,!--no-wide-nb") bound to the field to app.
  std::function<CLI::Option*(CLI::App&, const std::string& names, void*)> add;
  std::function<nlohmann::json(const void*)> get;
  std::function<void(const nlohmann::json&, const char* key, void*)> set;  ///< strict: read_setting
  std::function<std::optional<long double>(const void*)> number;           ///< a numeric flag's value
  std::function<std::string(const void*)> text;                            ///< the value as a user writes it

  Flag& in(Range r) { return range = r, *this; }
  Flag& one_of(std::vector<std::string> values) { return choices = std::move(values), *this; }
  Flag& not_saved() { return key.clear(), *this; }
  Flag& free_on_resume() { return on_resume = OnResume::may_change, *this; }
  Flag& command_line_on_resume() { return on_resume = OnResume::command_line, *this; }
  Flag& or_off(const char* off) { return negation = off, *this; }
  Flag& shown_as(const char* text) { return shown_default = text, *this; }
};

namespace detail {
template <typename V>
std::string value_text(const V& value) {
  if constexpr (std::is_same_v<V, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<V>) {
    return fmt::format("{}", value);
  } else {
    return tapegrad::clip_for_message(value);
  }
}
}  // namespace detail

/// The flag `name` setting config.*field; config.json saves it under `name` without "--" (or the
/// table's spelling of it).
template <typename C, typename V>
Flag flag(const char* name, V C::*field, const char* help) {
  Flag f;
  f.name = name;
  f.key = std::string(name).substr(2);
  f.help = help;
  f.is_switch = std::is_same_v<V, bool>;
  f.integral = std::is_integral_v<V> && !std::is_same_v<V, bool>;
  f.add = [field](CLI::App& app, const std::string& names, void* c) -> CLI::Option* {
    V& value = static_cast<C*>(c)->*field;
    if constexpr (std::is_same_v<V, bool>) {
      return app.add_flag(names, value);
    } else {
      return app.add_option(names, value);
    }
  };
  f.get = [field](const void* c) { return nlohmann::json(static_cast<const C*>(c)->*field); };
  f.set = [field](const nlohmann::json& json, const char* key, void* c) {
    read_setting(json, key, static_cast<C*>(c)->*field);
  };
  f.number = [field](const void* c) -> std::optional<long double> {
    if constexpr (std::is_arithmetic_v<V> && !std::is_same_v<V, bool>) {
      return static_cast<long double>(static_cast<const C*>(c)->*field);
    } else {
      (void)c, (void)field;
      return std::nullopt;
    }
  };
  f.text = [field](const void* c) { return detail::value_text(static_cast<const C*>(c)->*field); };
  return f;
}

/// A value config.json saves under `key` that no flag sets (the program sets it, e.g. what
/// --precision auto resolved to).
template <typename C, typename V>
Flag saved(const char* key, V C::*field) {
  Flag f = flag("--", field, "");
  f.name.clear();
  f.key = key;
  f.add = nullptr;
  return f;
}

/// a's flags, then b's.
inline std::vector<Flag> join(std::vector<Flag> a, std::vector<Flag> b) {
  for (Flag& f : b) a.push_back(std::move(f));
  return a;
}

/// How config.json spells a flag's key: "d-model" or "d_model".
enum class Keys { dashes, underscores };

/// The flags of one program, untyped: the work behind Flags<C>.
class FlagTable {
 public:
  struct Group {
    const char* name;  ///< the --help section; empty: none
    std::vector<Flag> flags;
  };
  FlagTable(const char* program, int version, Keys keys, std::vector<Group> groups);

  const std::string& program() const { return program_; }
  int version() const { return version_; }
  const std::vector<Flag>& flags() const { return flags_; }
  /// The flag named `name` (or its negation); throws std::logic_error for a name the table lacks.
  const Flag& at(std::string_view name) const;

 protected:
  void add_options(CLI::App& app, void* config) const;
  nlohmann::json write(const void* config) const;
  void read(const nlohmann::json& json, void* config) const;
  std::optional<std::string> range_problem(const void* config) const;
  void take_saved(void* config, const void* saved, const std::function<bool(const Flag&)>& given) const;
  std::optional<std::string> resume_mismatch(const void* config, const void* saved) const;
  std::string markdown(const void* defaults, const std::string& extra_title,
                       const std::function<std::string(const Flag&)>& extra) const;

 private:
  std::string program_;
  int version_;
  std::vector<Flag> flags_;
};

/// The flags of a program whose settings are a C.
template <typename C>
class Flags : public FlagTable {
 public:
  using FlagTable::FlagTable;

  /// Registers every flag with app, in its group (an option group of app), bound to config's fields;
  /// --help shows the defaults config holds.
  void add_to(CLI::App& app, C& config) const { add_options(app, &config); }
  /// config.json: "version" and every saved setting.
  nlohmann::json to_json(const C& config) const { return write(&config); }
  /// Reads what to_json wrote, strictly: a config.json of another version (or none), an unknown or
  /// missing key, a value of the wrong type, out of its range or not among its choices is a
  /// std::runtime_error naming the key and the value.
  C from_json(const nlohmann::json& json) const {
    C config;
    read(json, &config);
    return config;
  }
  /// The first flag whose value is outside its range or choices, as one line naming the flag and the
  /// value ("--layers 0 must be positive"); the rules between flags are the program's.
  std::optional<std::string> check(const C& config) const { return range_problem(&config); }
  /// --resume: `given` with the saved run's value of every saved flag that may not change on resume and
  /// that `is_given` says the command line did not give (a saved setting without a flag is left as is).
  C with_saved(const C& given, const C& saved, const std::function<bool(const Flag&)>& is_given) const {
    C merged = given;
    take_saved(&merged, &saved, is_given);
    return merged;
  }
  /// The first flag config gives otherwise than the saved run, where --resume may not change it:
  /// "--lr 0.5 differs from 0.02".
  std::optional<std::string> resume_conflict(const C& config, const C& saved) const {
    return resume_mismatch(&config, &saved);
  }
  /// Sets the flag `name` of config to `value` (JSON), strictly as config.json is read.
  void assign(C& config, std::string_view name, const nlohmann::json& value) const {
    const Flag& f = at(name);
    f.set(nlohmann::json{{f.key.empty() ? "value" : f.key, value}}, f.key.empty() ? "value" : f.key.c_str(), &config);
  }
  /// The README's table of the flags: flag, default, help, and an extra column when extra_title is given.
  std::string markdown_table(const std::string& extra_title = {},
                             const std::function<std::string(const Flag&)>& extra = {}) const {
    const C defaults{};
    return markdown(&defaults, extra_title, extra);
  }
};

/// Whether the command line gave `flag` (or its negation) to app.
bool given_on(const CLI::App& app, const Flag& flag);

}  // namespace examples
