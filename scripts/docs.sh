#!/usr/bin/env bash
# The API reference: runs Doxygen (Debian's doxygen) with docs/Doxyfile and writes
# build/docs/html/index.html. Fails, listing them, on any Doxygen warning: a public class, struct or
# namespace-level entity without a comment, or a comment Doxygen cannot read. Members of a documented
# class whose name and signature say everything (size(), shape(), an options field) are not required
# to carry a comment of their own, so their "is not documented" warnings are set aside.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's doxygen, installed here if missing (as scripts/install_deps.sh installs the build's packages;
# the test command does not need it).
if ! command -v doxygen >/dev/null; then
  echo "docs.sh: installing Debian's doxygen"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends doxygen
fi
mkdir -p build/docs
rm -f build/docs/warnings.log
doxygen docs/Doxyfile >/dev/null
# Doxygen also reports nn::Module<T, Derived> deriving from Module<T, void> (the registry base of the
# same template) as a "potential recursive class relation": it is not one.
warnings=$(grep -v -E 'Member .* of (class|struct|union) .* is not documented|potential recursive class relation between class tapegrad::nn::Module' build/docs/warnings.log | sort -u || true)
if [ -n "$warnings" ]; then
  echo "$warnings" >&2
  echo "docs.sh: $(echo "$warnings" | wc -l) Doxygen warning(s) above" >&2
  exit 1
fi
echo "docs.sh: the API reference is in build/docs/html/index.html"
