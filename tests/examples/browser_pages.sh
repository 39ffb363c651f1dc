#!/usr/bin/env bash
# Renders train_imdb's HTML pages in headless Chromium and checks the DOM the page scripts built.
# Usage: browser_pages.sh TRAIN_IMDB FIXTURE_DIR explain|report
# Trains a tiny model on the fixture (seconds), writes the page, dumps the rendered DOM and a
# screenshot, and asserts: no script error, the script ran to its end (body data-ok="1"), and the
# counts that say the page shows the right thing (tokens, layers x heads, points per epoch).
set -euo pipefail
program=$1 fixture=$2 page=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "FAIL: chromium is not installed (scripts/install_deps.sh installs Debian's chromium)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tapegrad-browser-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

epochs=3 layers=2 heads=2
"$program" --data "$fixture" --no-download --d-model 8 --heads $heads --layers $layers --ff 16 --vocab-size 50 --ngram-buckets 64 --wide-buckets 97 \
  --max-len 32 --epochs $epochs --batch-size 2 --valid-fraction 0.34 --warmup 1 --lr 0.02 --log-every 1 \
  --threads 1 --out "$work/run" > "$work/train.out" 2> "$work/train.err" || fail "training: $(cat "$work/train.err")"
grep -qx "report: $work/run/report.html" "$work/train.out" || fail "training did not print where the report is"

render() {  # render FILE: prints the DOM after the page's scripts ran; saves FILE.png
  local profile
  profile=$(mktemp -d "$work/profile-XXXXXX")
  local flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
    --disable-sync --no-first-run --user-data-dir="$profile")
  timeout 60 "$browser" "${flags[@]}" --window-size=1200,1600 --screenshot="$1.png" "file://$1" > /dev/null 2>&1 \
    || fail "chromium --screenshot of $1 failed"
  [ "$(stat -c %s "$1.png")" -gt 10000 ] || fail "the screenshot of $1 is nearly empty"
  timeout 60 "$browser" "${flags[@]}" --dump-dom "file://$1" 2> /dev/null || fail "chromium --dump-dom of $1 failed"
}

# check DOM_FILE NAME EXPECTED PYTHON_EXPRESSION: the expression (over the DOM text `d`) must equal EXPECTED.
check() {
  local got
  got=$(python3 -c "import re,sys; d=open(sys.argv[1], encoding='utf-8').read(); print($4)" "$1")
  [ "$got" = "$3" ] || fail "$2: got '$got', expected '$3'"
  echo "ok: $2 = $got"
}
count() { echo "len(re.findall(r'''$1''', d))"; }

case "$page" in
  explain)
    review='A <b>great</b> & "moving" film </script><script>document.title="x"</script>, the acting was wonderful but the plot was dull.'
    "$program" explain --run "$work/run" --output "$work/explain.html" "$review" > "$work/explain.out" \
      || fail "explain failed"
    # The tokens the tokenizer gives ("<", "b", ">", ... are tokens of their own), at most --max-len 32.
    tokens=$(python3 -c "import re,sys; print(min(32, len(re.findall(r\"[a-z0-9']+|[^\s]\", sys.argv[1].lower()))))" "$review")
    render "$work/explain.html" > "$work/explain.dom"
    dom="$work/explain.dom"
    check "$dom" "script errors" 0 "$(count 'class="script-error"')"
    check "$dom" "page script finished" 1 "$(count '<body[^>]* data-ok="1"')"
    check "$dom" "saliency tokens" "$tokens" "$(count '<span class="tok[ a-z]*" data-i=')"
    check "$dom" "body data-tokens" "$tokens" "re.search(r'data-tokens=\"(\d+)\"', d).group(1)"
    check "$dom" "head thumbnails (layers x heads)" $((layers * heads)) "$(count '<canvas class="thumb"')"
    check "$dom" "head choices (+ mean)" $((heads + 1)) "len(re.findall(r'<option', re.search(r'<select id=\"head\">.*?</select>', d, re.S).group(0)))"
    check "$dom" "layer choices" $layers "len(re.findall(r'<option', re.search(r'<select id=\"layer\">.*?</select>', d, re.S).group(0)))"
    check "$dom" "head-view query tokens" "$tokens" "$(count 'class="query-tok"')"
    check "$dom" "heatmap cells" $((tokens * tokens)) "$(count '<rect [^>]*class="cell"')"
    check "$dom" "some attention lines" True "len(re.findall(r'class=\"attn-line\"', d)) > 0"
    check "$dom" "rows sum to 1" True "float(re.search(r'data-max-row-error=\"([^\"]+)\"', d).group(1)) < 1e-3"
    check "$dom" "the review's script did not run" True "'<title>train_imdb explain</title>' in d"
    ;;
  report)
    render "$work/run/report.html" > "$work/report.dom"
    dom="$work/report.dom"
    check "$dom" "script errors" 0 "$(count 'class="script-error"')"
    check "$dom" "page script finished" 1 "$(count '<body[^>]* data-ok="1"')"
    for series in valid_loss valid_acc train_loss train_acc; do
      check "$dom" "$series points" $epochs \
        "len(re.findall(r'<circle', re.search(r'data-series=\"$series\".*?</g>', d, re.S).group(0)))"
    done
    check "$dom" "epoch rows" $epochs "$(count 'class="epoch-row"')"
    check "$dom" "positional encoding positions x dims" "32x8" \
      "re.search(r'data-pe-positions=\"(\d+)\"', d).group(1) + 'x' + re.search(r'data-pe-dims=\"(\d+)\"', d).group(1)"
    check "$dom" "test score shown" 1 "$(count 'id="test-score"')"
    ;;
  *) fail "unknown page '$page'" ;;
esac
echo "passed: the $page page"
