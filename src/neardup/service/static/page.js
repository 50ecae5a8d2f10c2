// The neardup page: compare two texts, browse the clusters. Plain DOM, no dependencies, no
// network access beyond this service. Texts are inserted as text nodes, never as HTML.
"use strict";

const MEASURES = {
  cosine: "cosine of the TF-IDF keyword vectors",
  euclidean: "1 / (1 + distance) of the same vectors",
  common: "characters shared, with multiplicity, / length of the longer",
  levenshtein: "1 − edit distance / length of the longer",
  simhash: "1 − Hamming distance / 64 of the Simhash fingerprints",
  lcsubstr: "longest common substring / length of the shorter",
  mcc: "most characters agreeing at one offset / length of the shorter",
  contiguity: "runs of agreeing characters, squared, at the best offset",
  jaccard: "shared shingles / all shingles",
  containment: "shared shingles / shingles of the smaller text",
  coverage: "share of the shorter text inside shingles the other has (what dedup decides on)",
};
const COLORS = 6;
const PAGE = 50;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    throw new Error(`${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new Error(data && data.message ? data.message : `${response.status}`);
  return data;
}

function showError(box, err) {
  box.textContent = err ? String(err.message || err) : "";
  box.hidden = !err;
}

// The server counts offsets in code points; JavaScript strings in UTF-16 units.
function highlighted(text, spans) {
  const chars = Array.from(text);
  const out = document.createDocumentFragment();
  let pos = 0;
  for (const s of [...spans].sort((x, y) => x.start - y.start)) {
    if (s.start < pos) continue;
    if (s.start > pos) out.append(chars.slice(pos, s.start).join(""));
    const mark = el("mark", { class: `p${s.k % COLORS}`, "data-p": String(s.k) });
    mark.textContent = chars.slice(s.start, s.start + s.length).join("");
    out.append(mark);
    pos = s.start + s.length;
  }
  if (pos < chars.length) out.append(chars.slice(pos).join(""));
  return out;
}

function linkMarks(container) {
  const clear = () => {
    for (const m of container.querySelectorAll("mark.active")) m.classList.remove("active");
  };
  container.addEventListener("mouseleave", clear);
  container.addEventListener("mouseover", (ev) => {
    const mark = ev.target.closest && ev.target.closest("mark");
    clear();
    if (!mark) return;
    for (const m of container.querySelectorAll(`mark[data-p="${mark.dataset.p}"]`)) {
      m.classList.add("active");
    }
  });
}

// -- compare ------------------------------------------------------------------------------

function readFile(input, target) {
  input.addEventListener("change", () => {
    const file = input.files && input.files[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => { target.value = String(reader.result); };
    reader.readAsText(file);
  });
}

async function runCompare(ev) {
  if (ev) ev.preventDefault();
  const status = $("compare-status");
  showError($("compare-error"), null);
  status.textContent = "comparing…";
  try {
    const r = await api("POST", "/v1/compare", { a: $("a").value, b: $("b").value, raw: $("raw").checked });
    renderComparison(r);
    status.textContent = "";
  } catch (err) {
    status.textContent = "";
    $("compare-result").hidden = true;
    showError($("compare-error"), err);
  }
}

function bar(score) {
  const node = el("div", { class: "bar" });
  node.style.width = `${(score * 100).toFixed(1)}%`; // CSSOM: allowed by the page's CSP
  return node;
}

function renderComparison(r) {
  const body = $("scores").querySelector("tbody");
  body.replaceChildren();
  for (const [name, score] of Object.entries(r.scores)) {
    body.append(el("tr", { title: MEASURES[name] || "" },
      el("td", {}, name),
      el("td", { class: "num" }, score.toFixed(4)),
      el("td", { class: "barcell" }, bar(score))));
  }
  const lenA = Array.from(r.a).length, lenB = Array.from(r.b).length;
  const covered = r.passages.reduce((n, p) => n + p.length, 0);
  $("passage-summary").textContent =
    `${r.passages.length} shared passage${r.passages.length === 1 ? "" : "s"} covering ` +
    `${covered.toLocaleString()} of ${lenA.toLocaleString()} characters of A and ` +
    `${lenB.toLocaleString()} of B.`;
  const list = $("passage-list");
  list.replaceChildren();
  r.passages.forEach((p, k) => {
    const short = p.text.length > 80 ? Array.from(p.text).slice(0, 80).join("") + "…" : p.text;
    list.append(el("li", { "data-p": String(k), onclick: () => {
      const m = $("text-a").querySelector(`mark[data-p="${k}"]`);
      const n = $("text-b").querySelector(`mark[data-p="${k}"]`);
      for (const x of [m, n]) if (x) x.scrollIntoView({ block: "nearest" });
    } }, el("mark", { class: `p${k % COLORS}` }, short), ` ${p.length} characters`));
  });
  $("text-a").replaceChildren(highlighted(r.a, r.passages.map((p, k) => ({ start: p.a_start, length: p.length, k }))));
  $("text-b").replaceChildren(highlighted(r.b, r.passages.map((p, k) => ({ start: p.b_start, length: p.length, k }))));
  renderDedup(r.dedup);
  $("compare-result").hidden = false;
}

// What neardup dedup decides for B after A: the verdict, the scores it decides on, and the
// shared text that counted beside what was set aside as chrome.
function renderDedup(d) {
  const box = $("dedup-verdict");
  box.replaceChildren();
  if (!d) return;
  const counted = d.counted.reduce((n, p) => n + p.length, 0);
  const chrome = d.chrome.reduce((n, p) => n + p.length, 0);
  box.append(
    el("p", {}, el("strong", {}, "dedup (B after A): "), d.summary),
    el("p", { class: "status" },
      `coverage of the shorter text ${d.score.toFixed(4)} (${d.measure}), of B's own text ` +
      `${d.copy_score.toFixed(4)}; shared text that counted: ${counted.toLocaleString()} ` +
      `characters, set aside as chrome: ${chrome.toLocaleString()} characters.`));
  if (d.chrome.length) {
    box.append(el("ul", { class: "chrome" }, ...d.chrome.slice(0, 10).map((p) =>
      el("li", {}, el("span", { class: "badge" }, "chrome"), " ",
        p.text.length > 80 ? Array.from(p.text).slice(0, 80).join("") + "…" : p.text))));
  }
}

// -- clusters -----------------------------------------------------------------------------

let clusterOffset = 0;

async function loadClusters(more) {
  if (!more) {
    clusterOffset = 0;
    $("cluster-list").querySelector("tbody").replaceChildren();
  }
  showError($("clusters-error"), null);
  try {
    const r = await api("GET", `/v1/clusters?limit=${PAGE}&offset=${clusterOffset}`);
    const body = $("cluster-list").querySelector("tbody");
    r.clusters.forEach((c, i) => {
      const open = () => { location.hash = "#cluster/" + encodeURIComponent(c.id); };
      body.append(el("tr", { onclick: open, "data-id": c.id },
        el("td", {}, String(clusterOffset + i + 1)),
        el("td", {}, String(c.size)),
        el("td", { class: "id" }, el("a", { href: "#cluster/" + encodeURIComponent(c.id) }, c.id)),
        el("td", {}, c.title || c.excerpt || "")));
    });
    clusterOffset += r.clusters.length;
    $("clusters-more").hidden = r.clusters.length < PAGE;
    $("clusters-empty").hidden = clusterOffset > 0;
    $("cluster-list").hidden = clusterOffset === 0;
  } catch (err) {
    showError($("clusters-error"), err);
  }
}

let memberState = null;

async function loadCluster(id, more) {
  if (!more) {
    memberState = { id, offset: 0, keptText: null };
    $("members").replaceChildren();
    $("cluster-title").textContent = `Cluster ${id}`;
    $("cluster-info").textContent = "loading…";
  }
  showError($("cluster-error"), null);
  try {
    const r = await api("GET", `/v1/clusters/${encodeURIComponent(id)}?limit=${PAGE}&offset=${memberState.offset}`);
    if (!memberState || memberState.id !== id) return;
    for (const member of r.members) {
      if (member.id === r.id) memberState.keptText = member.text;
      $("members").append(memberCard(member, r.id));
    }
    memberState.offset += r.members.length;
    $("cluster-info").textContent =
      `${r.size} document${r.size === 1 ? "" : "s"}, earliest first; the marked passages ` +
      `are shared with the kept document ${r.id}.` +
      (memberState.offset < r.size ? ` Showing ${memberState.offset}.` : "");
    $("members-more").hidden = memberState.offset >= r.size;
  } catch (err) {
    $("cluster-info").textContent = "";
    showError($("cluster-error"), err);
  }
}

function memberCard(m, label) {
  const kept = m.id === label;
  const when = new Date(m.timestamp * 1000);
  const verdict = kept
    ? el("div", { class: "verdict" }, el("span", { class: "badge kept" }, "kept"))
    : !m.is_duplicate
    ? el("div", { class: "verdict" }, el("span", { class: "badge kept" }, "kept"),
        m.extends ? ` · extends ${m.extends} with text of its own · score ` : "",
        m.extends ? el("strong", { class: "score" }, m.score.toFixed(4)) : "")
    : el("div", { class: "verdict" },
        el("span", { class: "badge" }, "duplicate"),
        ` of ${m.duplicate_of} · score `, el("strong", { class: "score" }, m.score.toFixed(4)),
        m.measure ? ` (${m.measure})` : "");
  const spans = m.shared.map((s, k) => ({ start: s.start, length: s.length, k: 0 }));
  const text = m.text === null
    ? el("div", { class: "text status" }, "(the store no longer has this text)")
    : el("div", { class: "text" }, highlighted(m.text, spans));
  const card = el("article", { class: "member" + (kept ? " kept" : ""), "data-id": m.id },
    el("div", { class: "id" }, m.id),
    m.title ? el("div", { class: "title" }, m.title) : null,
    verdict,
    el("div", { class: "status" }, isNaN(when) ? "" : when.toISOString().replace(".000Z", "Z")),
    text);
  if (!kept && m.text !== null) {
    card.append(el("button", { type: "button", onclick: () => {
      if (memberState.keptText === null) return;
      $("a").value = memberState.keptText;
      $("b").value = m.text;
      $("raw").checked = true;
      location.hash = "#compare";
      runCompare();
    } }, "Compare with the kept document"));
  }
  return card;
}

// -- views --------------------------------------------------------------------------------

function route() {
  const hash = location.hash || "#compare";
  let view = "compare";
  if (hash === "#clusters") view = "clusters";
  else if (hash.startsWith("#cluster/")) view = "cluster";
  for (const name of ["compare", "clusters", "cluster"]) $(`view-${name}`).hidden = name !== view;
  $("nav-compare").classList.toggle("current", view === "compare");
  $("nav-clusters").classList.toggle("current", view !== "compare");
  if (view === "clusters") loadClusters(false);
  if (view === "cluster") {
    const encoded = hash.slice("#cluster/".length);
    let id;
    try {
      id = decodeURIComponent(encoded);
    } catch (err) { // a hand-made address that is no percent-encoding: say so, never throw
      memberState = null;
      $("members").replaceChildren();
      $("members-more").hidden = true;
      $("cluster-title").textContent = "No such cluster";
      $("cluster-info").textContent = "";
      showError($("cluster-error"),
        new Error(`the address names no cluster: ${encoded} is not valid percent-encoding`));
      return;
    }
    loadCluster(id, false);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("compare-form").addEventListener("submit", runCompare);
  readFile($("file-a"), $("a"));
  readFile($("file-b"), $("b"));
  linkMarks($("compare-result"));
  $("clusters-more").addEventListener("click", () => loadClusters(true));
  $("members-more").addEventListener("click", () => loadCluster(memberState.id, true));
  window.addEventListener("hashchange", route);
  route();
});
