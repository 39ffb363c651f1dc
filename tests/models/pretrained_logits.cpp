// The tapegrad side of tests/fixtures/make_pretrained_fixtures.py --realistic, run by hand:
//   pretrained_logits MODEL_DIR IDS.safetensors OUT.safetensors SAVE_DIR STEPS
// loads MODEL_DIR with from_pretrained in float and double, writes to OUT the logits of IDS's "ids"
// (logits_f32, logits_f64) and the greedy continuation (greedy, STEPS tokens, in float) of its "prompt",
// and save_pretrained's folder of the float model to SAVE_DIR.
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>

#include "tapegrad/tapegrad.hpp"

namespace st = tapegrad::io::safetensors;

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: pretrained_logits MODEL_DIR IDS.safetensors OUT.safetensors SAVE_DIR STEPS\n";
    return 2;
  }
  try {
    const st::File inputs(argv[2]);
    const auto ids = inputs.get<std::int64_t>("ids");
    const auto prompt = inputs.get<std::int64_t>("prompt");
    const auto start = std::chrono::steady_clock::now();
    const auto model = tapegrad::models::from_pretrained<float>(argv[1]);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto exact = tapegrad::models::from_pretrained<double>(argv[1]);
    tapegrad::NoGradGuard no_grad;
    tapegrad::models::GenerateOptions greedy;
    greedy.sampling.temperature = 0.0;
    greedy.max_new_tokens = std::stoul(argv[5]);
    const auto tokens =
        tapegrad::models::generate(*model, std::vector<std::int64_t>(prompt.begin(), prompt.end()), greedy);
    st::save_file(argv[3], {{"logits_f32", model->forward(ids).data()},
                            {"logits_f64", exact->forward(ids).data()},
                            {"greedy", xt::xarray<std::int64_t>(xt::adapt(tokens, {tokens.size()}))}});
    tapegrad::models::save_pretrained(*model, argv[4]);
    std::cout << argv[1] << ": loaded in " << load_s << " s (float)\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
