#include "examples/imdb/html_explain.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "examples/imdb/html.hpp"

namespace imdb {

namespace {

constexpr const char* kStyle = R"(
.prob { display: flex; align-items: center; gap: 1em; margin: .6em 0; }
.bar { width: 320px; height: 14px; background: #c0504d; border-radius: 3px; overflow: hidden; }
.bar > div { height: 100%; background: #2e7d32; }
#saliency { max-height: 18em; overflow-y: auto; border: 1px solid #ddd; padding: .6em; line-height: 1.9; }
.tok { padding: .1em .15em; border-radius: 3px; cursor: default; }
.tok.unk { font-style: italic; text-decoration: underline dotted; }
.legend { display: inline-block; width: 1.2em; height: .9em; vertical-align: middle; border-radius: 2px; }
.controls { display: flex; gap: 1.2em; align-items: center; flex-wrap: wrap; margin: .5em 0; }
.views { display: flex; gap: 2em; flex-wrap: wrap; align-items: flex-start; }
.views svg text { font-size: 12px; font-family: ui-monospace, monospace; }
#thumbs { display: grid; gap: .6em; margin-top: .4em; }
.thumb-box { text-align: center; font-size: .8em; color: #555; cursor: pointer; }
.thumb-box.selected canvas { outline: 3px solid #1565c0; }
canvas.thumb { width: 110px; height: 110px; image-rendering: pixelated; border: 1px solid #ccc; }
)";

constexpr const char* kScript = R"JS(
(function () {
  var D = JSON.parse(document.getElementById('explain-data').textContent);
  var P = D.positions, L = D.layers, H = D.heads;
  // Each head's weights arrive as base64 little-endian float32.
  D.attention = D.attention.map(function (layer) {
    return layer.map(function (b64) {
      var bin = atob(b64), view = new DataView(new ArrayBuffer(bin.length)), out = new Float32Array(bin.length / 4);
      for (var i = 0; i < bin.length; ++i) view.setUint8(i, bin.charCodeAt(i));
      for (var j = 0; j < out.length; ++j) out[j] = view.getFloat32(4 * j, true);
      return out;
    });
  });
  var labels = (D.cls ? ['[CLS]'] : []).concat(D.tokens);
  var svgNS = 'http://www.w3.org/2000/svg';
  function el(name, attrs, parent) {
    var e = document.createElementNS(svgNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(x) { return Math.abs(x) >= 0.01 ? x.toFixed(3) : x.toExponential(2); }

  // Saliency: the review as tokens, orange where a token pushes the predicted class up, blue where down.
  var maxAbs = 0;
  D.saliency.forEach(function (s) { maxAbs = Math.max(maxAbs, Math.abs(s)); });
  if (maxAbs === 0) maxAbs = 1;
  var sal = document.getElementById('saliency');
  D.tokens.forEach(function (t, i) {
    var span = document.createElement('span');
    var s = D.saliency[i], a = Math.min(1, Math.abs(s) / maxAbs);
    span.className = 'tok' + (D.unknown[i] ? ' unk' : '');
    span.dataset.i = String(i);
    span.dataset.saliency = String(s);
    span.textContent = t;
    span.style.background = s >= 0 ? 'rgba(230, 120, 20, ' + a + ')' : 'rgba(30, 100, 220, ' + a + ')';
    span.title = 'token ' + i + ': saliency ' + fmt(s) + (D.unknown[i] ? ' (not in the vocabulary: <unk>)' : '');
    sal.appendChild(span);
    sal.appendChild(document.createTextNode(' '));
  });
  var order = D.saliency.map(function (s, i) { return i; });
  order.sort(function (a, b) { return Math.abs(D.saliency[b]) - Math.abs(D.saliency[a]); });
  var top = document.getElementById('top-tokens');
  order.slice(0, 10).forEach(function (i) {
    var tr = document.createElement('tr');
    [D.tokens[i], String(i), fmt(D.saliency[i])].forEach(function (text) {
      var td = document.createElement('td'); td.textContent = text; tr.appendChild(td);
    });
    top.appendChild(tr);
  });

  // The numbers behind the pictures: every row of every head should sum to 1.
  var maxRowError = 0;
  D.attention.forEach(function (layer) {
    layer.forEach(function (w) {
      for (var q = 0; q < P; ++q) {
        var sum = 0;
        for (var k = 0; k < P; ++k) sum += w[q * P + k];
        maxRowError = Math.max(maxRowError, Math.abs(sum - 1));
      }
    });
  });
  document.body.dataset.maxRowError = String(maxRowError);

  // Attention: the selected layer and head over a window of positions.
  var layerSel = document.getElementById('layer'), headSel = document.getElementById('head');
  var startIn = document.getElementById('start');
  var W = Math.min(P, 40);
  for (var l = 0; l < L; ++l) layerSel.add(new Option('layer ' + l, String(l)));
  for (var h = 0; h < H; ++h) headSel.add(new Option('head ' + h, String(h)));
  headSel.add(new Option('mean of heads', 'mean'));
  startIn.max = String(P - W);
  startIn.disabled = P <= W;
  var focus = -1;

  function weights() {
    var layer = D.attention[Number(layerSel.value)];
    if (headSel.value !== 'mean') return layer[Number(headSel.value)];
    var m = new Array(P * P).fill(0);
    layer.forEach(function (w) { for (var i = 0; i < P * P; ++i) m[i] += w[i] / H; });
    return m;
  }

  function drawLines(w, start) {
    var svg = document.getElementById('lines');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var rowH = 18, colW = 130, gap = 170, height = W * rowH + 30;
    svg.setAttribute('width', colW * 2 + gap);
    svg.setAttribute('height', height);
    el('text', {x: colW - 6, y: 14, 'text-anchor': 'end', fill: '#555'}, svg).textContent = 'query';
    el('text', {x: colW + gap + 6, y: 14, fill: '#555'}, svg).textContent = 'key';
    var y = function (i) { return 30 + (i - start) * rowH + rowH / 2; };
    var lines = el('g', {}, svg);
    var max = 0;
    for (var q0 = start; q0 < start + W; ++q0)
      for (var k0 = start; k0 < start + W; ++k0) max = Math.max(max, w[q0 * P + k0]);
    for (var q = start; q < start + W; ++q) {
      if (focus >= 0 && q !== focus) continue;
      // Each query's strongest keys in view (all of them for the hovered query), so that a long window
      // of near-uniform attention stays readable.
      var keys = [];
      for (var k = start; k < start + W; ++k) keys.push(k);
      keys.sort(function (x, z) { return w[q * P + z] - w[q * P + x]; });
      if (focus < 0) keys = keys.slice(0, 3);
      keys.forEach(function (k) {
        var a = w[q * P + k] / (max || 1);
        if (a < 0.05) return;
        el('line', {x1: colW, y1: y(q), x2: colW + gap, y2: y(k), stroke: '#1565c0', 'stroke-opacity': a,
                    'stroke-width': 0.5 + 2.5 * a, 'class': 'attn-line'}, lines);
      });
    }
    for (var i = start; i < start + W; ++i) {
      var left = el('text', {x: colW - 6, y: y(i) + 4, 'text-anchor': 'end', 'class': 'query-tok', 'data-i': i}, svg);
      left.textContent = labels[i].slice(0, 16);
      left.style.cursor = 'pointer';
      left.style.fontWeight = i === focus ? 'bold' : 'normal';
      left.addEventListener('mouseenter', (function (q) { return function () { focus = q; draw(); }; })(i));
      el('text', {x: colW + gap + 6, y: y(i) + 4, 'class': 'key-tok'}, svg).textContent = labels[i].slice(0, 16);
    }
  }
  document.getElementById('lines').addEventListener('mouseleave', function () {
    if (focus >= 0) { focus = -1; draw(); }
  });

  function drawHeatmap(w, start) {
    var svg = document.getElementById('heatmap');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var cell = Math.max(6, Math.min(14, Math.floor(440 / W))), margin = 110;
    svg.setAttribute('width', margin + W * cell + 10);
    svg.setAttribute('height', margin + W * cell + 10);
    var max = 0;
    for (var q = start; q < start + W; ++q)
      for (var k = start; k < start + W; ++k) max = Math.max(max, w[q * P + k]);
    if (max === 0) max = 1;
    for (var q2 = start; q2 < start + W; ++q2) {
      for (var k2 = start; k2 < start + W; ++k2) {
        var a = w[q2 * P + k2];
        var r = el('rect', {x: margin + (k2 - start) * cell, y: margin + (q2 - start) * cell, width: cell, height: cell,
                            fill: '#1565c0', 'fill-opacity': a / max, 'class': 'cell'}, svg);
        el('title', {}, r).textContent = labels[q2] + ' \u2192 ' + labels[k2] + ': ' + fmt(a);
      }
      el('text', {x: margin - 4, y: margin + (q2 - start + 0.8) * cell, 'text-anchor': 'end'}, svg).textContent =
          labels[q2].slice(0, 12);
      var tx = margin + (q2 - start + 0.8) * cell;
      el('text', {x: tx, y: margin - 4, transform: 'rotate(-60 ' + tx + ' ' + (margin - 4) + ')'}, svg).textContent =
          labels[q2].slice(0, 12);
    }
    el('rect', {x: margin, y: margin, width: W * cell, height: W * cell, fill: 'none', stroke: '#999'}, svg);
    document.getElementById('heat-note').textContent = 'darkest = ' + fmt(max) + ' (the largest weight shown)';
  }

  function draw() {
    var start = Math.min(Number(startIn.value) || 0, P - W);
    document.getElementById('window').textContent =
        'positions ' + start + '\u2013' + (start + W - 1) + ' of ' + P;
    var w = weights();
    drawLines(w, start);
    drawHeatmap(w, start);
    document.querySelectorAll('.thumb-box').forEach(function (box) {
      box.classList.toggle('selected', box.dataset.layer === layerSel.value && box.dataset.head === headSel.value);
    });
  }

  // Small multiples: every layer (rows) and head (columns), all positions.
  var thumbs = document.getElementById('thumbs');
  thumbs.style.gridTemplateColumns = 'repeat(' + H + ', max-content)';
  D.attention.forEach(function (layer, l) {
    layer.forEach(function (w, h) {
      var box = document.createElement('div');
      box.className = 'thumb-box';
      box.dataset.layer = String(l);
      box.dataset.head = String(h);
      var canvas = document.createElement('canvas');
      canvas.className = 'thumb';
      canvas.width = P;
      canvas.height = P;
      var ctx = canvas.getContext('2d'), img = ctx.createImageData(P, P);
      var max = 0;
      for (var i = 0; i < P * P; ++i) max = Math.max(max, w[i]);
      for (var j = 0; j < P * P; ++j) {
        var v = 1 - w[j] / (max || 1);
        img.data[4 * j] = Math.round(21 + 234 * v);
        img.data[4 * j + 1] = Math.round(101 + 154 * v);
        img.data[4 * j + 2] = Math.round(192 + 63 * v);
        img.data[4 * j + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      box.appendChild(canvas);
      box.appendChild(document.createElement('br'));
      box.appendChild(document.createTextNode('layer ' + l + ', head ' + h));
      box.addEventListener('click', function () { layerSel.value = String(l); headSel.value = String(h); draw(); });
      thumbs.appendChild(box);
    });
  });

  [layerSel, headSel, startIn].forEach(function (c) { c.addEventListener('input', draw); });
  draw();
  document.body.dataset.layers = String(L);
  document.body.dataset.heads = String(H);
  document.body.dataset.tokens = String(D.tokens.length);
  document.body.dataset.ok = '1';
})();
)JS";

// What the page's script draws: the tokens, the saliency and every head's attention.
nlohmann::json page_data(const Explanation& e) {
  nlohmann::json data;
  data["tokens"] = e.tokens;
  std::vector<bool> unknown;
  for (const auto id : e.ids) unknown.push_back(id == tapegrad::datasets::Vocabulary::unk_id);
  data["unknown"] = unknown;
  data["cls"] = e.cls;
  data["positions"] = e.positions;
  data["layers"] = e.layers;
  data["heads"] = e.heads;
  data["saliency"] = e.saliency;
  // float32 as the model computed them: exact, and 5.3 bytes a weight instead of about 10 as JSON text.
  nlohmann::json attention = nlohmann::json::array();
  for (const auto& layer : e.attention) {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& w : layer) heads.push_back(html::float32_base64(w));
    attention.push_back(std::move(heads));
  }
  data["attention"] = std::move(attention);
  return data;
}

// The n-gram part, a linear model, is explained exactly: each n-gram's share of its margin.
std::string ngram_section(const Explanation& e) {
  if (!e.has_ngram_part) return "";
  const auto rows = [&](bool up) {
    std::string out;
    std::size_t shown = 0;
    for (const auto& c : e.ngrams) {
      if ((c.margin > 0) != up || c.margin == 0.0 || shown == 12) continue;
      out += fmt::format("<tr><td>{}</td><td>{:+.3f}</td></tr>", html::escape(c.text), c.margin);
      ++shown;
    }
    return out.empty() ? std::string("<tr><td colspan=\"2\">none</td></tr>") : out;
  };
  return fmt::format(
      R"HTML(<h2>The two parts</h2>
<p class="note" id="parts">The logits are the sum of two parts. As margins logit[positive] &minus; logit[negative],
before the temperature: the encoder {enc:+.3f}, the n-gram part {ngram:+.3f} (its {count} features: the distinct words,
bigrams and trigrams; a word after a negation, up to the next punctuation mark or "but", counts as NOT_word, and with a
learned negation factor once more as "word x factor (negated)"). The n-gram part is
linear, so each n-gram's share below is exact; the saliency and attention further down explain the encoder.</p>
<div class="views"><table id="ngrams-up"><thead><tr><th>n-grams for positive</th><th>margin</th></tr></thead><tbody>{up}</tbody></table>
<table id="ngrams-down"><thead><tr><th>n-grams for negative</th><th>margin</th></tr></thead><tbody>{down}</tbody></table></div>
)HTML",
      fmt::arg("enc", e.encoder_margin), fmt::arg("ngram", e.ngram_margin), fmt::arg("count", e.ngrams.size()),
      fmt::arg("up", rows(true)), fmt::arg("down", rows(false)));
}

}  // namespace

std::string explain_html(const Explanation& e, const std::string& review, const std::string& run_name) {
  const bool positive = e.predicted == 1;
  const std::string truncated =
      e.total_tokens > e.tokens.size()
          ? fmt::format(" (of {}; the run keeps at most {} per review)", e.total_tokens, e.tokens.size())
          : "";
  std::string body = fmt::format(
      R"HTML(<h1>What the model saw</h1>
<p class="note">run <code>{run}</code> &middot; {n} tokens{truncated} &middot; {layers} layer(s) &times; {heads} head(s)</p>
<div class="prob"><div class="bar" title="P(positive)"><div style="width:{pct:.1f}%"></div></div>
<div><b id="p-positive">P(positive) = {p:.4f}</b> &rarr; <b>{label}</b> (logits {logits})</div></div>
<details><summary>The review as given</summary><p id="review">{review}</p></details>
{ngram_section}
<h2>Saliency</h2>
<p class="note">Gradient &times; input: for each token, the gradient of the <b>{label}</b> logit with respect to
its embedding, times that embedding, summed over the embedding dimensions.
<span class="legend" style="background:rgb(230,120,20)"></span> pushes the {label} logit up,
<span class="legend" style="background:rgb(30,100,220)"></span> pushes it down; the strongest token is fully coloured.
Underlined tokens are not in the vocabulary (&lt;unk&gt;).</p>
<div id="saliency"></div>
<details><summary>The 10 strongest tokens</summary><table><thead><tr><th>token</th><th>position</th><th>saliency</th></tr></thead>
<tbody id="top-tokens"></tbody></table></details>

<h2>Attention</h2>
<p class="note">The self-attention weights the model applied (eval mode: no dropout; the review was encoded alone,
so there is no padding). Each query's row sums to 1 over all {positions} positions; the views show a window of
them. The head view joins each query to its 3 strongest keys in view; hover a query on the left to see all of its lines. Lines and cells are shaded relative to the largest weight in view; lines below 5% of it are left out.</p>
<div class="controls"><select id="layer"></select><select id="head"></select>
<label>window start <input id="start" type="range" min="0" value="0"></label><span id="window"></span></div>
<div class="views"><svg id="lines"></svg><div><svg id="heatmap"></svg><div class="note" id="heat-note"></div></div></div>
<h2>All heads</h2>
<p class="note">Rows: layers; columns: heads; each square is the whole query &times; key matrix (queries down,
keys across), darker = more attention relative to that head's largest weight. Click one to select it above.</p>
<div id="thumbs"></div>
<script type="application/json" id="explain-data">{data}</script>)HTML",
      fmt::arg("run", html::escape(run_name)), fmt::arg("n", e.tokens.size()), fmt::arg("truncated", truncated),
      fmt::arg("layers", e.layers), fmt::arg("heads", e.heads), fmt::arg("pct", 100.0 * e.p_positive),
      fmt::arg("p", e.p_positive), fmt::arg("label", positive ? "positive" : "negative"),
      fmt::arg("logits", html::escape(fmt::format("{:.4f}", fmt::join(e.logits, ", ")))),
      fmt::arg("review", html::escape(review)), fmt::arg("ngram_section", ngram_section(e)),
      fmt::arg("positions", e.positions), fmt::arg("data", html::script_json(page_data(e))));
  return html::page("train_imdb explain", kStyle, body, kScript);
}

}  // namespace imdb
