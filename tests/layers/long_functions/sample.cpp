// A sample for scripts/long_functions.py (tests/CMakeLists.txt): the functions named "long_*" are over
// 80 lines from signature to closing brace and must be reported, those named "short_*" must not.
#define NOT_A_FUNCTION(x) \
  { x; }

namespace sample {

// 80 lines exactly: not over the limit.
int short_eighty() {
  int total = 0;
  // Filler line 1 of 76, a comment so that the bodies do not repeat code.
  // Filler line 2 of 76, a comment so that the bodies do not repeat code.
  // Filler line 3 of 76, a comment so that the bodies do not repeat code.
  // Filler line 4 of 76, a comment so that the bodies do not repeat code.
  // Filler line 5 of 76, a comment so that the bodies do not repeat code.
  // Filler line 6 of 76, a comment so that the bodies do not repeat code.
  // Filler line 7 of 76, a comment so that the bodies do not repeat code.
  // Filler line 8 of 76, a comment so that the bodies do not repeat code.
  // Filler line 9 of 76, a comment so that the bodies do not repeat code.
  // Filler line 10 of 76, a comment so that the bodies do not repeat code.
  // Filler line 11 of 76, a comment so that the bodies do not repeat code.
  // Filler line 12 of 76, a comment so that the bodies do not repeat code.
  // Filler line 13 of 76, a comment so that the bodies do not repeat code.
  // Filler line 14 of 76, a comment so that the bodies do not repeat code.
  // Filler line 15 of 76, a comment so that the bodies do not repeat code.
  // Filler line 16 of 76, a comment so that the bodies do not repeat code.
  // Filler line 17 of 76, a comment so that the bodies do not repeat code.
  // Filler line 18 of 76, a comment so that the bodies do not repeat code.
  // Filler line 19 of 76, a comment so that the bodies do not repeat code.
  // Filler line 20 of 76, a comment so that the bodies do not repeat code.
  // Filler line 21 of 76, a comment so that the bodies do not repeat code.
  // Filler line 22 of 76, a comment so that the bodies do not repeat code.
  // Filler line 23 of 76, a comment so that the bodies do not repeat code.
  // Filler line 24 of 76, a comment so that the bodies do not repeat code.
  // Filler line 25 of 76, a comment so that the bodies do not repeat code.
  // Filler line 26 of 76, a comment so that the bodies do not repeat code.
  // Filler line 27 of 76, a comment so that the bodies do not repeat code.
  // Filler line 28 of 76, a comment so that the bodies do not repeat code.
  // Filler line 29 of 76, a comment so that the bodies do not repeat code.
  // Filler line 30 of 76, a comment so that the bodies do not repeat code.
  // Filler line 31 of 76, a comment so that the bodies do not repeat code.
  // Filler line 32 of 76, a comment so that the bodies do not repeat code.
  // Filler line 33 of 76, a comment so that the bodies do not repeat code.
  // Filler line 34 of 76, a comment so that the bodies do not repeat code.
  // Filler line 35 of 76, a comment so that the bodies do not repeat code.
  // Filler line 36 of 76, a comment so that the bodies do not repeat code.
  // Filler line 37 of 76, a comment so that the bodies do not repeat code.
  // Filler line 38 of 76, a comment so that the bodies do not repeat code.
  // Filler line 39 of 76, a comment so that the bodies do not repeat code.
  // Filler line 40 of 76, a comment so that the bodies do not repeat code.
  // Filler line 41 of 76, a comment so that the bodies do not repeat code.
  // Filler line 42 of 76, a comment so that the bodies do not repeat code.
  // Filler line 43 of 76, a comment so that the bodies do not repeat code.
  // Filler line 44 of 76, a comment so that the bodies do not repeat code.
  // Filler line 45 of 76, a comment so that the bodies do not repeat code.
  // Filler line 46 of 76, a comment so that the bodies do not repeat code.
  // Filler line 47 of 76, a comment so that the bodies do not repeat code.
  // Filler line 48 of 76, a comment so that the bodies do not repeat code.
  // Filler line 49 of 76, a comment so that the bodies do not repeat code.
  // Filler line 50 of 76, a comment so that the bodies do not repeat code.
  // Filler line 51 of 76, a comment so that the bodies do not repeat code.
  // Filler line 52 of 76, a comment so that the bodies do not repeat code.
  // Filler line 53 of 76, a comment so that the bodies do not repeat code.
  // Filler line 54 of 76, a comment so that the bodies do not repeat code.
  // Filler line 55 of 76, a comment so that the bodies do not repeat code.
  // Filler line 56 of 76, a comment so that the bodies do not repeat code.
  // Filler line 57 of 76, a comment so that the bodies do not repeat code.
  // Filler line 58 of 76, a comment so that the bodies do not repeat code.
  // Filler line 59 of 76, a comment so that the bodies do not repeat code.
  // Filler line 60 of 76, a comment so that the bodies do not repeat code.
  // Filler line 61 of 76, a comment so that the bodies do not repeat code.
  // Filler line 62 of 76, a comment so that the bodies do not repeat code.
  // Filler line 63 of 76, a comment so that the bodies do not repeat code.
  // Filler line 64 of 76, a comment so that the bodies do not repeat code.
  // Filler line 65 of 76, a comment so that the bodies do not repeat code.
  // Filler line 66 of 76, a comment so that the bodies do not repeat code.
  // Filler line 67 of 76, a comment so that the bodies do not repeat code.
  // Filler line 68 of 76, a comment so that the bodies do not repeat code.
  // Filler line 69 of 76, a comment so that the bodies do not repeat code.
  // Filler line 70 of 76, a comment so that the bodies do not repeat code.
  // Filler line 71 of 76, a comment so that the bodies do not repeat code.
  // Filler line 72 of 76, a comment so that the bodies do not repeat code.
  // Filler line 73 of 76, a comment so that the bodies do not repeat code.
  // Filler line 74 of 76, a comment so that the bodies do not repeat code.
  // Filler line 75 of 76, a comment so that the bodies do not repeat code.
  // Filler line 76 of 76, a comment so that the bodies do not repeat code.
  return total;
}

// 81 lines, braces in a comment { and in strings ("{", '{') that must not count.
int long_eighty_one() {
  int total = 0;  // {{{
  const char* brace = "{";
  const char open = '{';
  // Filler line 1 of 75, a comment so that the bodies do not repeat code.
  // Filler line 2 of 75, a comment so that the bodies do not repeat code.
  // Filler line 3 of 75, a comment so that the bodies do not repeat code.
  // Filler line 4 of 75, a comment so that the bodies do not repeat code.
  // Filler line 5 of 75, a comment so that the bodies do not repeat code.
  // Filler line 6 of 75, a comment so that the bodies do not repeat code.
  // Filler line 7 of 75, a comment so that the bodies do not repeat code.
  // Filler line 8 of 75, a comment so that the bodies do not repeat code.
  // Filler line 9 of 75, a comment so that the bodies do not repeat code.
  // Filler line 10 of 75, a comment so that the bodies do not repeat code.
  // Filler line 11 of 75, a comment so that the bodies do not repeat code.
  // Filler line 12 of 75, a comment so that the bodies do not repeat code.
  // Filler line 13 of 75, a comment so that the bodies do not repeat code.
  // Filler line 14 of 75, a comment so that the bodies do not repeat code.
  // Filler line 15 of 75, a comment so that the bodies do not repeat code.
  // Filler line 16 of 75, a comment so that the bodies do not repeat code.
  // Filler line 17 of 75, a comment so that the bodies do not repeat code.
  // Filler line 18 of 75, a comment so that the bodies do not repeat code.
  // Filler line 19 of 75, a comment so that the bodies do not repeat code.
  // Filler line 20 of 75, a comment so that the bodies do not repeat code.
  // Filler line 21 of 75, a comment so that the bodies do not repeat code.
  // Filler line 22 of 75, a comment so that the bodies do not repeat code.
  // Filler line 23 of 75, a comment so that the bodies do not repeat code.
  // Filler line 24 of 75, a comment so that the bodies do not repeat code.
  // Filler line 25 of 75, a comment so that the bodies do not repeat code.
  // Filler line 26 of 75, a comment so that the bodies do not repeat code.
  // Filler line 27 of 75, a comment so that the bodies do not repeat code.
  // Filler line 28 of 75, a comment so that the bodies do not repeat code.
  // Filler line 29 of 75, a comment so that the bodies do not repeat code.
  // Filler line 30 of 75, a comment so that the bodies do not repeat code.
  // Filler line 31 of 75, a comment so that the bodies do not repeat code.
  // Filler line 32 of 75, a comment so that the bodies do not repeat code.
  // Filler line 33 of 75, a comment so that the bodies do not repeat code.
  // Filler line 34 of 75, a comment so that the bodies do not repeat code.
  // Filler line 35 of 75, a comment so that the bodies do not repeat code.
  // Filler line 36 of 75, a comment so that the bodies do not repeat code.
  // Filler line 37 of 75, a comment so that the bodies do not repeat code.
  // Filler line 38 of 75, a comment so that the bodies do not repeat code.
  // Filler line 39 of 75, a comment so that the bodies do not repeat code.
  // Filler line 40 of 75, a comment so that the bodies do not repeat code.
  // Filler line 41 of 75, a comment so that the bodies do not repeat code.
  // Filler line 42 of 75, a comment so that the bodies do not repeat code.
  // Filler line 43 of 75, a comment so that the bodies do not repeat code.
  // Filler line 44 of 75, a comment so that the bodies do not repeat code.
  // Filler line 45 of 75, a comment so that the bodies do not repeat code.
  // Filler line 46 of 75, a comment so that the bodies do not repeat code.
  // Filler line 47 of 75, a comment so that the bodies do not repeat code.
  // Filler line 48 of 75, a comment so that the bodies do not repeat code.
  // Filler line 49 of 75, a comment so that the bodies do not repeat code.
  // Filler line 50 of 75, a comment so that the bodies do not repeat code.
  // Filler line 51 of 75, a comment so that the bodies do not repeat code.
  // Filler line 52 of 75, a comment so that the bodies do not repeat code.
  // Filler line 53 of 75, a comment so that the bodies do not repeat code.
  // Filler line 54 of 75, a comment so that the bodies do not repeat code.
  // Filler line 55 of 75, a comment so that the bodies do not repeat code.
  // Filler line 56 of 75, a comment so that the bodies do not repeat code.
  // Filler line 57 of 75, a comment so that the bodies do not repeat code.
  // Filler line 58 of 75, a comment so that the bodies do not repeat code.
  // Filler line 59 of 75, a comment so that the bodies do not repeat code.
  // Filler line 60 of 75, a comment so that the bodies do not repeat code.
  // Filler line 61 of 75, a comment so that the bodies do not repeat code.
  // Filler line 62 of 75, a comment so that the bodies do not repeat code.
  // Filler line 63 of 75, a comment so that the bodies do not repeat code.
  // Filler line 64 of 75, a comment so that the bodies do not repeat code.
  // Filler line 65 of 75, a comment so that the bodies do not repeat code.
  // Filler line 66 of 75, a comment so that the bodies do not repeat code.
  // Filler line 67 of 75, a comment so that the bodies do not repeat code.
  // Filler line 68 of 75, a comment so that the bodies do not repeat code.
  // Filler line 69 of 75, a comment so that the bodies do not repeat code.
  // Filler line 70 of 75, a comment so that the bodies do not repeat code.
  // Filler line 71 of 75, a comment so that the bodies do not repeat code.
  // Filler line 72 of 75, a comment so that the bodies do not repeat code.
  // Filler line 73 of 75, a comment so that the bodies do not repeat code.
  // Filler line 74 of 75, a comment so that the bodies do not repeat code.
  // Filler line 75 of 75, a comment so that the bodies do not repeat code.
  return total + brace[0] + open;
}

struct Holder {
  // A constructor whose member initialisers use braces: one function from its signature on.
  Holder(int a, int b) : first_{a}, second_{b} {
    // Filler line 1 of 80, a comment so that the bodies do not repeat code.
    // Filler line 2 of 80, a comment so that the bodies do not repeat code.
    // Filler line 3 of 80, a comment so that the bodies do not repeat code.
    // Filler line 4 of 80, a comment so that the bodies do not repeat code.
    // Filler line 5 of 80, a comment so that the bodies do not repeat code.
    // Filler line 6 of 80, a comment so that the bodies do not repeat code.
    // Filler line 7 of 80, a comment so that the bodies do not repeat code.
    // Filler line 8 of 80, a comment so that the bodies do not repeat code.
    // Filler line 9 of 80, a comment so that the bodies do not repeat code.
    // Filler line 10 of 80, a comment so that the bodies do not repeat code.
    // Filler line 11 of 80, a comment so that the bodies do not repeat code.
    // Filler line 12 of 80, a comment so that the bodies do not repeat code.
    // Filler line 13 of 80, a comment so that the bodies do not repeat code.
    // Filler line 14 of 80, a comment so that the bodies do not repeat code.
    // Filler line 15 of 80, a comment so that the bodies do not repeat code.
    // Filler line 16 of 80, a comment so that the bodies do not repeat code.
    // Filler line 17 of 80, a comment so that the bodies do not repeat code.
    // Filler line 18 of 80, a comment so that the bodies do not repeat code.
    // Filler line 19 of 80, a comment so that the bodies do not repeat code.
    // Filler line 20 of 80, a comment so that the bodies do not repeat code.
    // Filler line 21 of 80, a comment so that the bodies do not repeat code.
    // Filler line 22 of 80, a comment so that the bodies do not repeat code.
    // Filler line 23 of 80, a comment so that the bodies do not repeat code.
    // Filler line 24 of 80, a comment so that the bodies do not repeat code.
    // Filler line 25 of 80, a comment so that the bodies do not repeat code.
    // Filler line 26 of 80, a comment so that the bodies do not repeat code.
    // Filler line 27 of 80, a comment so that the bodies do not repeat code.
    // Filler line 28 of 80, a comment so that the bodies do not repeat code.
    // Filler line 29 of 80, a comment so that the bodies do not repeat code.
    // Filler line 30 of 80, a comment so that the bodies do not repeat code.
    // Filler line 31 of 80, a comment so that the bodies do not repeat code.
    // Filler line 32 of 80, a comment so that the bodies do not repeat code.
    // Filler line 33 of 80, a comment so that the bodies do not repeat code.
    // Filler line 34 of 80, a comment so that the bodies do not repeat code.
    // Filler line 35 of 80, a comment so that the bodies do not repeat code.
    // Filler line 36 of 80, a comment so that the bodies do not repeat code.
    // Filler line 37 of 80, a comment so that the bodies do not repeat code.
    // Filler line 38 of 80, a comment so that the bodies do not repeat code.
    // Filler line 39 of 80, a comment so that the bodies do not repeat code.
    // Filler line 40 of 80, a comment so that the bodies do not repeat code.
    // Filler line 41 of 80, a comment so that the bodies do not repeat code.
    // Filler line 42 of 80, a comment so that the bodies do not repeat code.
    // Filler line 43 of 80, a comment so that the bodies do not repeat code.
    // Filler line 44 of 80, a comment so that the bodies do not repeat code.
    // Filler line 45 of 80, a comment so that the bodies do not repeat code.
    // Filler line 46 of 80, a comment so that the bodies do not repeat code.
    // Filler line 47 of 80, a comment so that the bodies do not repeat code.
    // Filler line 48 of 80, a comment so that the bodies do not repeat code.
    // Filler line 49 of 80, a comment so that the bodies do not repeat code.
    // Filler line 50 of 80, a comment so that the bodies do not repeat code.
    // Filler line 51 of 80, a comment so that the bodies do not repeat code.
    // Filler line 52 of 80, a comment so that the bodies do not repeat code.
    // Filler line 53 of 80, a comment so that the bodies do not repeat code.
    // Filler line 54 of 80, a comment so that the bodies do not repeat code.
    // Filler line 55 of 80, a comment so that the bodies do not repeat code.
    // Filler line 56 of 80, a comment so that the bodies do not repeat code.
    // Filler line 57 of 80, a comment so that the bodies do not repeat code.
    // Filler line 58 of 80, a comment so that the bodies do not repeat code.
    // Filler line 59 of 80, a comment so that the bodies do not repeat code.
    // Filler line 60 of 80, a comment so that the bodies do not repeat code.
    // Filler line 61 of 80, a comment so that the bodies do not repeat code.
    // Filler line 62 of 80, a comment so that the bodies do not repeat code.
    // Filler line 63 of 80, a comment so that the bodies do not repeat code.
    // Filler line 64 of 80, a comment so that the bodies do not repeat code.
    // Filler line 65 of 80, a comment so that the bodies do not repeat code.
    // Filler line 66 of 80, a comment so that the bodies do not repeat code.
    // Filler line 67 of 80, a comment so that the bodies do not repeat code.
    // Filler line 68 of 80, a comment so that the bodies do not repeat code.
    // Filler line 69 of 80, a comment so that the bodies do not repeat code.
    // Filler line 70 of 80, a comment so that the bodies do not repeat code.
    // Filler line 71 of 80, a comment so that the bodies do not repeat code.
    // Filler line 72 of 80, a comment so that the bodies do not repeat code.
    // Filler line 73 of 80, a comment so that the bodies do not repeat code.
    // Filler line 74 of 80, a comment so that the bodies do not repeat code.
    // Filler line 75 of 80, a comment so that the bodies do not repeat code.
    // Filler line 76 of 80, a comment so that the bodies do not repeat code.
    // Filler line 77 of 80, a comment so that the bodies do not repeat code.
    // Filler line 78 of 80, a comment so that the bodies do not repeat code.
    // Filler line 79 of 80, a comment so that the bodies do not repeat code.
    // Filler line 80 of 80, a comment so that the bodies do not repeat code.
  }
  int short_method() const { return first_ + second_; }
  int first_, second_;
};

// A lambda inside counts towards its function.
int long_with_lambda() {
  int total = 0;
  const auto add = [&](int v) {
    total += v;
    // Filler line 1 of 80, a comment so that the bodies do not repeat code.
    // Filler line 2 of 80, a comment so that the bodies do not repeat code.
    // Filler line 3 of 80, a comment so that the bodies do not repeat code.
    // Filler line 4 of 80, a comment so that the bodies do not repeat code.
    // Filler line 5 of 80, a comment so that the bodies do not repeat code.
    // Filler line 6 of 80, a comment so that the bodies do not repeat code.
    // Filler line 7 of 80, a comment so that the bodies do not repeat code.
    // Filler line 8 of 80, a comment so that the bodies do not repeat code.
    // Filler line 9 of 80, a comment so that the bodies do not repeat code.
    // Filler line 10 of 80, a comment so that the bodies do not repeat code.
    // Filler line 11 of 80, a comment so that the bodies do not repeat code.
    // Filler line 12 of 80, a comment so that the bodies do not repeat code.
    // Filler line 13 of 80, a comment so that the bodies do not repeat code.
    // Filler line 14 of 80, a comment so that the bodies do not repeat code.
    // Filler line 15 of 80, a comment so that the bodies do not repeat code.
    // Filler line 16 of 80, a comment so that the bodies do not repeat code.
    // Filler line 17 of 80, a comment so that the bodies do not repeat code.
    // Filler line 18 of 80, a comment so that the bodies do not repeat code.
    // Filler line 19 of 80, a comment so that the bodies do not repeat code.
    // Filler line 20 of 80, a comment so that the bodies do not repeat code.
    // Filler line 21 of 80, a comment so that the bodies do not repeat code.
    // Filler line 22 of 80, a comment so that the bodies do not repeat code.
    // Filler line 23 of 80, a comment so that the bodies do not repeat code.
    // Filler line 24 of 80, a comment so that the bodies do not repeat code.
    // Filler line 25 of 80, a comment so that the bodies do not repeat code.
    // Filler line 26 of 80, a comment so that the bodies do not repeat code.
    // Filler line 27 of 80, a comment so that the bodies do not repeat code.
    // Filler line 28 of 80, a comment so that the bodies do not repeat code.
    // Filler line 29 of 80, a comment so that the bodies do not repeat code.
    // Filler line 30 of 80, a comment so that the bodies do not repeat code.
    // Filler line 31 of 80, a comment so that the bodies do not repeat code.
    // Filler line 32 of 80, a comment so that the bodies do not repeat code.
    // Filler line 33 of 80, a comment so that the bodies do not repeat code.
    // Filler line 34 of 80, a comment so that the bodies do not repeat code.
    // Filler line 35 of 80, a comment so that the bodies do not repeat code.
    // Filler line 36 of 80, a comment so that the bodies do not repeat code.
    // Filler line 37 of 80, a comment so that the bodies do not repeat code.
    // Filler line 38 of 80, a comment so that the bodies do not repeat code.
    // Filler line 39 of 80, a comment so that the bodies do not repeat code.
    // Filler line 40 of 80, a comment so that the bodies do not repeat code.
    // Filler line 41 of 80, a comment so that the bodies do not repeat code.
    // Filler line 42 of 80, a comment so that the bodies do not repeat code.
    // Filler line 43 of 80, a comment so that the bodies do not repeat code.
    // Filler line 44 of 80, a comment so that the bodies do not repeat code.
    // Filler line 45 of 80, a comment so that the bodies do not repeat code.
    // Filler line 46 of 80, a comment so that the bodies do not repeat code.
    // Filler line 47 of 80, a comment so that the bodies do not repeat code.
    // Filler line 48 of 80, a comment so that the bodies do not repeat code.
    // Filler line 49 of 80, a comment so that the bodies do not repeat code.
    // Filler line 50 of 80, a comment so that the bodies do not repeat code.
    // Filler line 51 of 80, a comment so that the bodies do not repeat code.
    // Filler line 52 of 80, a comment so that the bodies do not repeat code.
    // Filler line 53 of 80, a comment so that the bodies do not repeat code.
    // Filler line 54 of 80, a comment so that the bodies do not repeat code.
    // Filler line 55 of 80, a comment so that the bodies do not repeat code.
    // Filler line 56 of 80, a comment so that the bodies do not repeat code.
    // Filler line 57 of 80, a comment so that the bodies do not repeat code.
    // Filler line 58 of 80, a comment so that the bodies do not repeat code.
    // Filler line 59 of 80, a comment so that the bodies do not repeat code.
    // Filler line 60 of 80, a comment so that the bodies do not repeat code.
    // Filler line 61 of 80, a comment so that the bodies do not repeat code.
    // Filler line 62 of 80, a comment so that the bodies do not repeat code.
    // Filler line 63 of 80, a comment so that the bodies do not repeat code.
    // Filler line 64 of 80, a comment so that the bodies do not repeat code.
    // Filler line 65 of 80, a comment so that the bodies do not repeat code.
    // Filler line 66 of 80, a comment so that the bodies do not repeat code.
    // Filler line 67 of 80, a comment so that the bodies do not repeat code.
    // Filler line 68 of 80, a comment so that the bodies do not repeat code.
    // Filler line 69 of 80, a comment so that the bodies do not repeat code.
    // Filler line 70 of 80, a comment so that the bodies do not repeat code.
    // Filler line 71 of 80, a comment so that the bodies do not repeat code.
    // Filler line 72 of 80, a comment so that the bodies do not repeat code.
    // Filler line 73 of 80, a comment so that the bodies do not repeat code.
    // Filler line 74 of 80, a comment so that the bodies do not repeat code.
    // Filler line 75 of 80, a comment so that the bodies do not repeat code.
    // Filler line 76 of 80, a comment so that the bodies do not repeat code.
    // Filler line 77 of 80, a comment so that the bodies do not repeat code.
    // Filler line 78 of 80, a comment so that the bodies do not repeat code.
    // Filler line 79 of 80, a comment so that the bodies do not repeat code.
    // Filler line 80 of 80, a comment so that the bodies do not repeat code.
  };
  add(1);
  return total;
}

const int kTable[] = {1, 2, 3};

}  // namespace sample
