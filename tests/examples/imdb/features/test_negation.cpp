// English's negators and scope ends, and their ids in a vocabulary.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "examples/imdb/features/negation.hpp"

using namespace imdb::features;
using tapegrad::datasets::Vocabulary;
using Strings = std::vector<std::string>;

TEST_CASE("negation words: negators, the n't forms and scope ends, and their ids in a vocabulary", "[imdb][features]") {
  for (const char* w : {"not", "no", "never", "nothing", "nor", "cannot", "without", "hardly", "don't", "isn't",
                        "couldn't", "n't", "dont", "wasnt", "aint"}) {
    CHECK(is_negator(w));
  }
  for (const char* w : {"note", "know", "nothingness", "t", "'t", "n", "but", ".", "dnt", "nt"})
    CHECK_FALSE(is_negator(w));
  for (const char* t : {".", ",", ";", ":", "!", "?", "(", ")", "but"}) CHECK(ends_negation_scope(t));
  for (const char* t : {"-", "'", "and", "not", "\"", "butter"}) CHECK_FALSE(ends_negation_scope(t));
  const auto v = Vocabulary::build(Strings{"it is not bad , but it isn't good . no ! never"}, 100);
  std::vector<std::int64_t> negators = {v.id("not"), v.id("isn't"), v.id("no"), v.id("never")};
  std::sort(negators.begin(), negators.end());
  CHECK(negator_ids(v) == negators);
  std::vector<std::int64_t> ends = {v.id(","), v.id("but"), v.id("."), v.id("!")};
  std::sort(ends.begin(), ends.end());
  CHECK(scope_end_ids(v) == ends);
}
