/// @file
/// A run folder: the files one training run writes, under one name each, shared by every program.
///   config.json             the run's settings (written atomically)
///   metrics.jsonl           train/metrics.hpp
///   last.ckpt.safetensors   the latest training checkpoint, for --resume (train/checkpoint.hpp)
///   model.safetensors       the best model so far (train/model_file.hpp)
/// plus whatever a program adds (vocab.txt, report.html), named through file().
///
/// Nothing is lost by mistake: a new run refuses a folder that holds another run's checkpoint or model
/// unless told to overwrite it, and even then that run's files are only moved aside (into
/// previous-run/) until the new run has written its first checkpoint; a new run that stops before it
/// gets them back (restore_previous), and so does the next start after a kill (settle). A resumed run
/// must find its config and checkpoint.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::train {

/// A run's folder and the files in it (config, metrics, checkpoint, model, and the program's own), with
/// the rules that protect an earlier run from a new one.
class RunDirectory {
 public:
  static constexpr const char* kConfig = "config.json";
  static constexpr const char* kMetrics = "metrics.jsonl";
  static constexpr const char* kCheckpoint = "last.ckpt.safetensors";
  static constexpr const char* kModel = "model.safetensors";
  /// The subfolder that holds an overwritten run's files until the new run's first checkpoint.
  static constexpr const char* kPrevious = "previous-run";

  /// The folder need not exist yet. `own_files` names the program's other files of a run (vocab.txt):
  /// they count as a run's too and --overwrite removes them.
  explicit RunDirectory(std::filesystem::path dir, std::vector<std::string> own_files = {});

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path config() const { return dir_ / kConfig; }
  std::filesystem::path metrics() const { return dir_ / kMetrics; }
  std::filesystem::path checkpoint() const { return dir_ / kCheckpoint; }
  std::filesystem::path model() const { return dir_ / kModel; }
  std::filesystem::path file(const std::string& name) const { return dir_ / name; }

  /// The run files present in the folder (config, metrics, checkpoint, model and the program's own).
  std::vector<std::string> existing_files() const;

  /// Throws UsageError if a new run may not start here: the folder (or its previous-run/) holds a
  /// checkpoint or a model and overwrite is false ("<flag> DIR already holds a run (config.json, ...):
  /// continue it with --resume, or pass --overwrite to replace it"). flag is how the program calls the
  /// folder ("--out").
  void check_new(bool overwrite, const std::string& flag = "--out") const;
  /// check_new, then creates the folder and, with overwrite, moves the previous run's files into
  /// previous-run/ (replacing what an older overwrite left there). Call it once the settings and the
  /// data are known to work, right before the run writes its first file. Returns the names moved.
  std::vector<std::string> start_new(bool overwrite, const std::string& flag = "--out") const;
  /// previous-run/, where start_new(true) keeps the overwritten run until the new one's first checkpoint.
  std::filesystem::path previous() const { return dir_ / kPrevious; }
  /// Deletes previous-run/ (once the new run has its first checkpoint); returns whether there was one.
  bool drop_previous() const;
  /// Puts the overwritten run back (a new run that stopped before its first checkpoint): the new run's
  /// files are removed and previous-run/'s moved back. Returns the names restored (none without one).
  std::vector<std::string> restore_previous() const;
  /// Finishes what a killed process left, before a run starts or resumes here (by the one process that
  /// writes the run's files): an overwrite stopped before the new run's first checkpoint gets the
  /// previous run back, one stopped after it loses previous-run/, and the temporary files of killed
  /// saves are removed. Returns what it did, a line each, for the log.
  std::vector<std::string> settle() const;
  /// Throws UsageError naming the first of `names` (default: config and checkpoint) that is missing:
  /// "--resume: DIR/last.ckpt.safetensors does not exist, so there is no run to continue".
  void check_resumable(std::initializer_list<const char*> names = {kConfig, kCheckpoint}) const;
  /// Throws UsageError "<flag> DIR has no <name>" for the first of names that is missing: a run folder
  /// that evaluate or predict cannot use.
  void check_has(std::initializer_list<const char*> names, const std::string& flag = "--run") const;

  /// The run's input files as they are now — config.json and the program's own files that exist
  /// (vocab.txt) — as metadata entries "file.<name>" = FNV-1a of the bytes (16 hex digits). The trainer
  /// stores them in every model file and checkpoint, whose checksum covers them, so that a changed or
  /// damaged config or vocabulary is noticed when the run is read back.
  io::safetensors::Metadata file_digests() const;
  /// Throws std::runtime_error naming the file when a file recorded by file_digests() in the metadata
  /// of `recorded_in` (a model file or checkpoint of this run) is missing or differs now. Files written
  /// before digests were recorded are not checked.
  void check_files(const std::filesystem::path& recorded_in) const;

  /// config.json, written atomically (pretty-printed, one key per line).
  void write_config(const nlohmann::json& config) const;
  /// config.json as JSON; throws std::runtime_error naming the file if it is missing or malformed.
  nlohmann::json read_config() const;

 private:
  std::filesystem::path dir_;
  std::vector<std::string> own_files_;
};

}  // namespace tapegrad::train
