#include "tapegrad/train/model_file.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tapegrad/train/checksum.hpp"

namespace tapegrad::train {

template <typename T>
void save_model(const std::filesystem::path& path, const StateDict<T>& state,
                const io::safetensors::Metadata& metadata) {
  if (metadata.count(kChecksumKey)) {
    throw std::invalid_argument(
        fmt::format("{}: metadata key \"{}\" is reserved for the model file's checksum", path.string(), kChecksumKey));
  }
  std::map<std::string, io::safetensors::TensorView> tensors;  // views: nothing is copied to save
  add_views(tensors, state, "", path.string(), "model");
  // load_model refuses non-finite values: such a file must not replace a good one.
  std::vector<std::string> problems;
  check_finite(tensors, "", problems);
  if (!problems.empty()) {
    throw std::invalid_argument(fmt::format("{}: not saved, the model {}", path.string(), problems.front()));
  }
  io::safetensors::Metadata with_checksum = metadata;
  with_checksum[kChecksumKey] = checksum(tensors, metadata);
  io::safetensors::save_file(path.string(), tensors, with_checksum);
}

template <typename T>
void save_model(const std::filesystem::path& path, const nn::Module<T>& model,
                const io::safetensors::Metadata& metadata) {
  save_model(path, model.state_dict(), metadata);
}

namespace {

// Throws what load_model reports of file for a model of state's names, shapes and dtypes.
template <typename T>
void check_file(const std::filesystem::path& path, const io::safetensors::File& file, const StateDict<T>& state) {
  std::vector<std::string> problems;
  const auto tensors = views_of(file, problems);
  check_checksum(file, tensors, problems);
  auto mismatches = io::safetensors::detail::state_dict_problems(file, state, true, "");
  problems.insert(problems.end(), mismatches.begin(), mismatches.end());  // non-finite values among them
  io::safetensors::detail::throw_problems(path.string(), "load_model", problems);
}

}  // namespace

template <typename T>
io::safetensors::Metadata load_model(const std::filesystem::path& path, StateDict<T>& state) {
  const io::safetensors::File file(path.string());
  check_file(path, file, state);
  io::safetensors::load_state_dict(file, state, true);
  io::safetensors::Metadata metadata = file.metadata();
  metadata.erase(kChecksumKey);
  return metadata;
}

template <typename T>
io::safetensors::Metadata load_model(const std::filesystem::path& path, nn::Module<T>& model) {
  StateDict<T> state = model.state_dict();  // aliases the model's tensors: loading it loads the model
  return load_model(path, state);
}

template <typename T>
void check_model(const std::filesystem::path& path, const nn::Module<T>& model) {
  check_file(path, io::safetensors::File(path.string()), model.state_dict());
}

template void save_model<float>(const std::filesystem::path&, const StateDict<float>&,
                                const io::safetensors::Metadata&);
template void save_model<double>(const std::filesystem::path&, const StateDict<double>&,
                                 const io::safetensors::Metadata&);
template void save_model<float>(const std::filesystem::path&, const nn::Module<float>&,
                                const io::safetensors::Metadata&);
template void save_model<double>(const std::filesystem::path&, const nn::Module<double>&,
                                 const io::safetensors::Metadata&);
template io::safetensors::Metadata load_model<float>(const std::filesystem::path&, StateDict<float>&);
template io::safetensors::Metadata load_model<double>(const std::filesystem::path&, StateDict<double>&);
template io::safetensors::Metadata load_model<float>(const std::filesystem::path&, nn::Module<float>&);
template io::safetensors::Metadata load_model<double>(const std::filesystem::path&, nn::Module<double>&);
template void check_model<float>(const std::filesystem::path&, const nn::Module<float>&);
template void check_model<double>(const std::filesystem::path&, const nn::Module<double>&);

}  // namespace tapegrad::train
