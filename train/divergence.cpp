#include "tapegrad/train/divergence.hpp"

#include <fmt/format.h>

#include <vector>

#include "tapegrad/optim/adagrad.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/rmsprop.hpp"
#include "tapegrad/optim/sgd.hpp"

namespace tapegrad::train {

namespace {

// The thresholds: far outside the ranges that train stably, so that a named setting is a real suspect.
constexpr double kAdaptiveLr = 0.1, kSgdLr = 10, kDecoupledDecay = 0.1, kL2Decay = 1, kBeta2 = 0.9, kLargeEps = 0.1,
                 kTinyEps = 1e-12;

void check_eps(double eps, std::vector<std::string>& out) {
  if (eps > kLargeEps) out.push_back(fmt::format("eps {} (above {}: lr then scales the raw gradient)", eps, kLargeEps));
  if (eps < kTinyEps) out.push_back(fmt::format("eps {} (below {})", eps, kTinyEps));
}

void check_l2(double weight_decay, std::vector<std::string>& out) {
  if (weight_decay > kL2Decay) out.push_back(fmt::format("weight_decay {} (above {})", weight_decay, kL2Decay));
}

}  // namespace

template <typename T>
std::string divergence_suspects(const optim::Optimizer<T>& optimizer, double clip_norm) {
  if (const auto* inner = optimizer.wrapped()) return divergence_suspects(*inner, clip_norm);
  std::vector<std::string> suspects;
  const double lr = optimizer.lr();
  // average: the name of the squared gradients' decay (Adam's beta2, RMSprop's alpha).
  const auto adam_like = [&](const char* average, double beta2, double eps) {
    if (lr > kAdaptiveLr) suspects.push_back(fmt::format("lr {:.4g} (above {})", lr, kAdaptiveLr));
    if (beta2 < kBeta2) suspects.push_back(fmt::format("{} {} (below {})", average, beta2, kBeta2));
    check_eps(eps, suspects);
  };
  if (const auto* adamw = dynamic_cast<const optim::AdamW<T>*>(&optimizer)) {
    const auto& o = adamw->options();
    adam_like("beta2", o.betas.second, o.eps);
    if (lr * o.weight_decay > kDecoupledDecay) {
      suspects.push_back(fmt::format("weight_decay {} (lr * weight_decay {:.4g} above {})", o.weight_decay,
                                     lr * o.weight_decay, kDecoupledDecay));
    }
  } else if (const auto* adam = dynamic_cast<const optim::Adam<T>*>(&optimizer)) {
    const auto& o = adam->options();
    adam_like("beta2", o.betas.second, o.eps);
    check_l2(o.weight_decay, suspects);
  } else if (const auto* rmsprop = dynamic_cast<const optim::RMSprop<T>*>(&optimizer)) {
    const auto& o = rmsprop->options();
    adam_like("alpha", o.alpha, o.eps);
    check_l2(o.weight_decay, suspects);
  } else if (const auto* adagrad = dynamic_cast<const optim::Adagrad<T>*>(&optimizer)) {
    const auto& o = adagrad->options();
    if (lr > kAdaptiveLr) suspects.push_back(fmt::format("lr {:.4g} (above {})", lr, kAdaptiveLr));
    check_eps(o.eps, suspects);
    check_l2(o.weight_decay, suspects);
  } else {
    if (lr > kSgdLr) suspects.push_back(fmt::format("lr {:.4g} (above {})", lr, kSgdLr));
    if (const auto* sgd = dynamic_cast<const optim::SGD<T>*>(&optimizer))
      check_l2(sgd->options().weight_decay, suspects);
  }
  if (suspects.empty()) return "";
  if (clip_norm <= 0) suspects.push_back("gradient clipping off");
  return fmt::format("likely to blame: {}", fmt::join(suspects, ", "));
}

template std::string divergence_suspects<float>(const optim::Optimizer<float>&, double);
template std::string divergence_suspects<double>(const optim::Optimizer<double>&, double);

}  // namespace tapegrad::train
