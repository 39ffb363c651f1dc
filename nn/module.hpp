/// @file
/// Module<T>: the base of every nn layer, holding named parameters, buffers and submodules in
/// registration order so that names, state_dict() and print(model) match torch.nn.Module.
///
/// Calling a module runs its forward, like torch's `__call__`: `linear(x)`, `(*model)(ids, mask)`.
/// Forward methods are ordinary typed member functions whose signatures differ from module to module,
/// so the call operator comes from naming your class as the second template argument of its base
/// (the CRTP), the only boilerplate a module of your own needs:
///
/// @code{.cpp}
///   struct MLP : nn::Module<float, MLP> {
///     MLP(Generator& gen) { fc = this->register_module("fc", std::make_shared<nn::Linear<float>>(4, 2, gen)); }
///     Tensor<float> forward(const Tensor<float>& x) const { return (*fc)(x).relu(); }
///     std::string name() const override { return "MLP"; }
///     std::shared_ptr<nn::Linear<float>> fc;
///   };
///   MLP model(gen);
///   Tensor<float> y = model(x);  // model.forward(x)
/// @endcode
///
/// `nn::Module<T, Derived>` derives from `nn::Module<T>` (which is `nn::Module<T, void>`), so
/// pointers and references to `Module<T>` hold any module as before. Its operator() forwards every
/// argument to `Derived::forward`, so default arguments of forward work (`layer(src)` or
/// `layer(src, mask)`); a braced list such as `{}` cannot be forwarded and must be spelled as its type.
/// A class derived from `Module<T>` alone still works, it just is not callable.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/io/state_dict.hpp"

namespace tapegrad::nn {

/// `Module<T>` is the base holding the registry; `Module<T, Derived>` adds `operator()` (see above).
template <typename T, typename Derived = void>
class Module;

/// The base of every module: parameters, buffers, submodules, generators and the printed tree.
template <typename T>
class Module<T, void> {
 public:
  Module() = default;
  virtual ~Module() = default;
  /// A module owns its parameters' identity; copying one would silently alias or duplicate them.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Registers a parameter under `name` and makes it require grad; returns the same handle, so a
  /// subclass keeps it in a member (`weight = register_parameter("weight", ...)`).
  Tensor<T> register_parameter(const std::string& name, Tensor<T> tensor);
  /// A buffer is state that is not trained (e.g. a positional-encoding table). Non-persistent
  /// buffers are left out of state_dict(), as in torch.
  Tensor<T> register_buffer(const std::string& name, Tensor<T> tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  /// A random generator the module draws from while running (dropout masks). Listing them lets a
  /// training checkpoint save and restore every generator's state without knowing the model.
  void register_generator(const std::string& name, std::shared_ptr<Generator> gen);
  /// Registers the generator the module's dropout masks draw from as "dropout_generator" and returns
  /// it: shared when given (one generator for a model's every layer), else a new one seeded with
  /// gen.next_u64().
  std::shared_ptr<Generator> register_dropout_generator(Generator& gen, std::shared_ptr<Generator> shared = nullptr);
  /// Recursive with dotted names like named_parameters(); a generator shared by several modules is
  /// listed once, under the first name reached (an ancestor's before its children's).
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> named_generators() const;

  /// Recursive, in registration order (own entries first, then each child's), with torch's dotted names.
  std::vector<Tensor<T>> parameters() const;
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters() const;
  std::vector<Tensor<T>> buffers() const;
  std::vector<std::pair<std::string, Tensor<T>>> named_buffers() const;
  /// Parameters and persistent buffers; the tensors alias the module's own, so writing into their
  /// values (mutable_data()) loads a checkpoint into the module.
  StateDict<T> state_dict() const;
  /// Copies a state_dict's values into this module's parameters and persistent buffers, as torch's
  /// `module.load_state_dict(state_dict, strict)`: a float64 state_dict loads into a float32 module and
  /// back (torch's copy_), and a missing or unexpected name (with strict), a wrong shape or a NaN is
  /// refused, all named in one std::runtime_error, leaving the module unchanged (io::load_state_dict).
  /// U is float or double. A file loads through io::safetensors::load_state_dict(path, state_dict()).
  template <typename U>
  void load_state_dict(const StateDict<U>& state, bool strict = true) {
    StateDict<T> own = state_dict();
    io::load_state_dict(own, state, strict);
  }
  /// Removes the direct submodule registered as name and returns it (torch's `del module.name`), so
  /// that its parameters leave named_parameters() and state_dict(). A member pointer to it, or a
  /// container's own list (Sequential, ModuleList), is the caller's to update. Throws
  /// std::invalid_argument naming it if there is none.
  std::shared_ptr<Module<T>> remove_module(const std::string& name);
  /// Direct submodules only.
  const std::vector<std::pair<std::string, std::shared_ptr<Module<T>>>>& named_children() const { return children_; }
  std::vector<std::shared_ptr<Module<T>>> children() const;

  /// Sets training mode here and in every descendant (torch's train() / eval()).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Drops every parameter's gradient (torch's zero_grad(set_to_none=True)).
  void zero_grad();
  /// Number of scalar parameters, counting each once.
  std::size_t num_parameters() const;

  /// The class name shown by to_string() ("Linear"), and the text inside its parentheses. Every
  /// module must name itself: name() is pure virtual, as C++ cannot tell a class's name at run time
  /// the way torch does (type(self).__name__), so a module without it does not compile.
  virtual std::string name() const = 0;
  virtual std::string extra_repr() const { return ""; }
  /// The module tree exactly as torch prints it with print(model).
  std::string to_string() const;

 protected:
  void add_child(const std::string& name, std::shared_ptr<Module<T>> module);

 private:
  struct Buffer {
    std::string name;
    Tensor<T> tensor;
    bool persistent;
  };
  void check_new_name(const std::string& name) const;
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Tensor<T>>>& out) const;
  void collect_generators(const std::string& prefix,
                          std::vector<std::pair<std::string, std::shared_ptr<Generator>>>& out) const;
  void collect_buffers(const std::string& prefix, bool persistent_only,
                       std::vector<std::pair<std::string, Tensor<T>>>& out) const;

  std::vector<std::pair<std::string, Tensor<T>>> parameters_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> generators_;
  std::vector<std::pair<std::string, std::shared_ptr<Module<T>>>> children_;
  bool training_ = true;
};

/// A module whose call operator runs `Derived::forward` with the same arguments (torch's `__call__`).
template <typename T, typename Derived>
class Module : public Module<T, void> {
 public:
  /// `module(args...)` is `module.forward(args...)`. The trailing return types keep the operator out
  /// of overload resolution when forward does not accept the arguments (D delays the check until
  /// Derived is complete).
  template <typename... Args, typename D = Derived>
  auto operator()(Args&&... args) const -> decltype(std::declval<const D&>().forward(std::forward<Args>(args)...)) {
    return static_cast<const D&>(*this).forward(std::forward<Args>(args)...);
  }
  template <typename... Args, typename D = Derived>
  auto operator()(Args&&... args) -> decltype(std::declval<D&>().forward(std::forward<Args>(args)...)) {
    return static_cast<D&>(*this).forward(std::forward<Args>(args)...);
  }
};

/// A double as Python's repr() writes it ("0.1", "1e-05", "0.0"), for extra_repr().
std::string python_float(double value);

/// Writes module.to_string().
template <typename T>
std::ostream& operator<<(std::ostream& os, const Module<T>& module);

extern template class Module<float>;
extern template class Module<double>;

}  // namespace tapegrad::nn
