/* The run report's script (see projections/report.py): it reads the data embedded in #report-data and
   draws the header, the version strip (a version's graph, why and diff are drawn when it is opened), the
   timeline lanes, the criteria matrix, the late results and the resume receipt, and wires the filters. It
   builds markup from escaped strings only (esc) and requests nothing. Node and edge markup matches
   projections.graph_render.render_svg (ids, classes, data attributes, geometry, the edge curve); colours
   come from the page's CSS, which the status tables make. */
(function () {
  "use strict";
  var app = document.getElementById("app");
  function decoded() {  /* the data: JSON, gzip-compressed, base64 (projections.report.embed_data) */
    var text = atob(document.getElementById("report-data").textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  decoded().then(draw).catch(function (err) {
    app.textContent = "This report's data cannot be read: " + err;
    throw err;
  });

  function draw(D) {
  var S = D.S, G = D.styles.geometry;
  function str(i) { return i == null || i < 0 ? null : S[i]; }
  function named(names, row) { var o = {}; names.forEach(function (k, i) { o[k] = row[i]; }); return o; }
  D.versions = D.versions.map(function (row, i) {
    var o = named(D.fields.version, row);
    o.index = i; o.actor = str(o.actor); o.reason = str(o.reason);
    return o;
  });
  var TRACES = {};  /* seq -> the W3C trace context its command carried (only records that carried one) */
  (D.traces || []).forEach(function (t) { TRACES[t[0]] = str(t[1]) + (str(t[2]) ? " (" + str(t[2]) + ")" : ""); });
  function traceOf(seq) { return seq == null ? "" : TRACES[seq] || ""; }
  var REASONS = D.styles.reasons, MARKS = D.styles.marks;  /* projections.report.REASON_COLOURS, MARK_COLOURS */
  function esc(t) {
    return String(t == null ? "" : t).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function short(t, n) { t = String(t).split(/\s+/).join(" "); return t.length <= n ? t : t.slice(0, n - 1) + "\u2026"; }
  function wrapped(t, width, lines) {  /* projections.graph_render.wrapped */
    var words = String(t).split(/\s+/).filter(function (w) { return w; }), out = [], line = "";
    while (words.length) {
      var word = words[0], joined = line ? line + " " + word : word;
      if (joined.length <= width) { line = joined; words.shift(); continue; }
      if (!line) { line = word.slice(0, width); words[0] = word.slice(width); }
      out.push(line); line = "";
      if (out.length === lines) { break; }
    }
    if (line && out.length < lines) { out.push(line); }
    if (words.length) { out[out.length - 1] = short(out[out.length - 1] + " " + words.join(" "), width); }
    return out;
  }
  function when(ts) { return ts ? ts.slice(0, 19).replace("T", " ") : ""; }
  function el(tag, attrs, html) {
    var e = document.createElement(tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (html != null) { e.innerHTML = html; }
    return e;
  }
  function section(title, id) {
    app.appendChild(el("h2", {}, esc(title)));
    var box = el("div", {id: id});
    app.appendChild(box);
    return box;
  }
  var SHOWN = 12;  /* a longer list shows its first items and folds the rest */
  function list(items) {
    if (!items.length) { return "<div class=\"empty\">none</div>"; }
    function li(i) { return "<li>" + i + "</li>"; }
    var head = "<ul class=\"flat\">" + items.slice(0, SHOWN).map(li).join("") + "</ul>";
    return items.length <= SHOWN ? head : head + "<details><summary>" + (items.length - SHOWN) + " more</summary><ul class=\"flat\">" +
      items.slice(SHOWN).map(li).join("") + "</ul></details>";
  }

  /* header */
  var v = D.verify || {};
  var verdict = v.ok ? "<span class=\"pill ok\">verify passed</span>"
    : "<span class=\"pill bad\">verify failed: " + esc(v.code) + "</span> " + esc(v.message);
  var head = el("header", {id: "header"});
  head.innerHTML = "<h1>" + esc(D.goal || "(no plan yet)") + "</h1>" +
    "<div class=\"meta\">run <b>" + esc(D.run) + "</b> \u00b7 outcome <b id=\"outcome\">" + esc(D.outcome || "open") + "</b>" +
    (D.outcome_reason ? " (" + esc(D.outcome_reason) + ")" : "") + " \u00b7 <b>" + D.versions.length +
    "</b> plan versions \u00b7 last seq <b>" + D.last_seq + "</b> \u00b7 " + verdict + "</div>" +
    "<div class=\"meta\">head hash <span class=\"hash\" id=\"head-hash\">" + esc(D.head) + "</span></div>";
  app.appendChild(head);

  /* version strip */
  var strip = section("Plan versions", "versions");
  var n = D.versions.length, mw = Math.max(3, Math.min(28, Math.floor(1300 / Math.max(n, 1))));
  var marks = [];
  D.versions.forEach(function (ver, i) {
    var reason = ver.reason || "created";
    marks.push("<rect class=\"mark\" id=\"mark-v" + ver.v + "\" data-version=\"" + ver.v + "\" x=\"" + (i * mw) +
      "\" y=\"2\" width=\"" + Math.max(mw - 1, 2) + "\" height=\"22\" fill=\"" + (REASONS[reason] || "#52525b") +
      "\"><title>v" + ver.v + " \u00b7 " + esc(ver.actor) + " \u00b7 " + esc(when(ver.ts)) + " \u00b7 " + esc(reason) + "</title></rect>");
  });
  strip.innerHTML = "<div id=\"strip\"><svg width=\"" + Math.max(n * mw, 10) + "\" height=\"26\">" + marks.join("") +
    "</svg></div><div class=\"legend\">" + Object.keys(REASONS).map(function (r) {
      return "<span><i style=\"background:" + REASONS[r] + ";border-color:" + REASONS[r] + "\"></i>" + esc(r) + "</span>";
    }).join("") + "</div><div id=\"version-panel\" class=\"card\"></div>";
  var panel = document.getElementById("version-panel");
  strip.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest(".mark") : null;
    if (t) { openVersion(+t.getAttribute("data-version")); }
  });

  function badges(nd) {
    var b = [];
    if (nd.attempt) { b.push("attempt " + nd.attempt + (nd.max === null ? "" : "/" + nd.max)); }
    if (nd.ready) { b.push("ready"); }
    if (nd.inv) { b.push("\u21ba " + nd.inv); } else if (nd.reset && nd.reset !== "added") { b.push("\u21ba " + nd.reset.replace(/_/g, " ")); }
    if (nd.late) { b.push("\u2691 " + nd.late + " late"); }
    return b;
  }
  var NODE_DEFAULTS = [0, 0, 3, -1, 0, -1];  /* projections.report._NODE_DEFAULTS */
  function titlesBefore(ver) {  /* a node's title is -1 when the step had it in the version before */
    var titles = {};
    for (var i = 0; i < ver.index; i++) {
      D.versions[i].n.forEach(function (r) { if (r[1] >= 0) { titles[r[0]] = S[r[1]]; } });
    }
    return titles;
  }
  function nodesOf(ver) {
    var titles = titlesBefore(ver);
    return ver.n.map(function (r) {
      r = r.concat(NODE_DEFAULTS.slice(r.length - 5));
      return {id: S[r[0]], title: r[1] >= 0 ? S[r[1]] : titles[r[0]], status: S[r[2]], rank: r[3], slot: r[4], ready: !!(r[5] & 1),
        critical: !!(r[5] & 2), attempt: r[6], max: r[7], inv: str(r[8]), late: r[9], reset: str(r[10])};
    });
  }
  function edgesOf(ver) {
    var out = [], crit = {}, kinds = {};
    ver.ce.forEach(function (i) { crit[i] = true; });
    ver.ek.forEach(function (p) { kinds[p[0]] = S[p[1]]; });
    for (var i = 0; 2 * i < ver.e.length; i++) {
      out.push({s: ver.e[2 * i], t: ver.e[2 * i + 1], kind: kinds[i] || "depends_on", critical: !!crit[i]});
    }
    return out;
  }
  function changesOf(row) {
    var ch = named(D.fields.changes, row);
    function ids(l) { return l.map(function (i) { return S[i]; }); }
    function rows(l) {
      return l.map(function (r) { return {step: S[r[0]], cause: str(r[1]), was: str(r[2]), attempt: r[3], upstream: str(r[4]), fields: ids(r[5])}; });
    }
    return {kept: ids(ch.kept), added: ids(ch.added), reset: rows(ch.reset), removed: rows(ch.removed),
      criteria_reset: rows(ch.criteria_reset), criteria_added: ids(ch.criteria_added), criteria_removed: ids(ch.criteria_removed)};
  }
  function origin(nd) {
    return [G.margin + nd.rank * (G.node_w + G.col_gap), G.margin + Math.floor(nd.slot * G.row_h / 2)];
  }
  function graphSvg(ver) {
    var nodes = nodesOf(ver), out = [];
    var w = 2 * G.margin + Math.max(ver.ranks, 1) * (G.node_w + G.col_gap) - G.col_gap;
    var h = 2 * G.margin + Math.max(ver.widest - 1, 0) * G.row_h + G.node_h;
    out.push("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plan-graph\" width=\"" + w + "\" height=\"" + h +
      "\" viewBox=\"0 0 " + w + " " + h + "\" data-version=\"" + ver.v + "\">" +
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" " +
      "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#71717a\"/></marker></defs><g class=\"edges\">");
    edgesOf(ver).forEach(function (e) {
      var s = nodes[e.s], t = nodes[e.t], a = origin(s), b = origin(t);
      var x1 = a[0] + G.node_w, y1 = a[1] + Math.floor(G.node_h / 2), x2 = b[0], y2 = b[1] + Math.floor(G.node_h / 2);
      var mid = Math.floor((x1 + x2) / 2);
      out.push("<path id=\"" + esc("edge-" + s.id + "\u2192" + t.id) + "\" class=\"edge" + (e.critical ? " critical" : "") +
        "\" data-step-id=\"" + esc(t.id) + "\" data-status=\"" + esc(t.status) + "\" data-version=\"" + ver.v +
        "\" data-source=\"" + esc(s.id) + "\" data-target=\"" + esc(t.id) + "\" data-kind=\"" + esc(e.kind) +
        "\" d=\"M" + x1 + "," + y1 + " C" + mid + "," + y1 + " " + mid + "," + y2 + " " + x2 + "," + y2 +
        "\" fill=\"none\" stroke-width=\"1.5\" marker-end=\"url(#arrow)\"/>");
    });
    out.push("</g><g class=\"nodes\">");
    nodes.forEach(function (nd) {
      var o = origin(nd), cls = "node" + (nd.ready ? " ready" : "") + (nd.critical ? " critical" : "") +
        (nd.inv ? " reset" : "") + (nd.late ? " late" : "");
      var label = (D.styles.nodes[nd.status] || D.styles.nodes[""]).label;
      out.push("<g id=\"" + esc("step-" + nd.id) + "\" class=\"" + cls + "\" data-step-id=\"" + esc(nd.id) +
        "\" data-status=\"" + esc(nd.status) + "\" data-version=\"" + ver.v + "\" data-ready=\"" + nd.ready +
        "\" data-critical=\"" + nd.critical + "\" data-attempt=\"" + nd.attempt + "\" data-late=\"" + nd.late + "\"" +
        (nd.inv ? " data-invalidated-by=\"" + esc(nd.inv) + "\"" : "") + ">" +
        "<title>" + esc(nd.id + ": " + nd.title + " (" + label + ")") + "</title>" +
        "<rect x=\"" + o[0] + "\" y=\"" + o[1] + "\" width=\"" + G.node_w + "\" height=\"" + G.node_h + "\" rx=\"6\"/>" +
        "<text class=\"sid\" x=\"" + (o[0] + 8) + "\" y=\"" + (o[1] + 16) + "\">" + esc(short(nd.id, G.title_chars)) + "</text>" +
        "<text x=\"" + (o[0] + 8) + "\" y=\"" + (o[1] + 32) + "\">" + wrapped(nd.title, G.title_chars, G.title_lines).map(function (l, i) {
          return "<tspan x=\"" + (o[0] + 8) + "\" dy=\"" + (i ? G.line_h : 0) + "\">" + esc(l) + "</tspan>";
        }).join("") + "</text>" +
        "<text class=\"badge\" x=\"" + (o[0] + 8) + "\" y=\"" + (o[1] + G.node_h - 7) + "\">" + esc(badges(nd).join(" \u00b7 ")) + "</text></g>");
    });
    out.push("</g></svg>");
    return out.join("");
  }
  function why(c) {
    var parts = [];
    var words = {contract_changed: "contract changed", upstream_invalidated: "invalidated by", superseded: "superseded while in progress",
      unblocked: "unblocked", removed: "removed", input_changed: "an input's digest changed, from"};
    if (c.cause) { parts.push((words[c.cause] || c.cause) + (c.upstream ? " " + c.upstream : "") + (c.fields && c.fields.length ? " (" + c.fields.join(", ") + ")" : "")); }
    if (c.was) { parts.push("was " + c.was + (c.attempt ? ", attempt " + c.attempt : "")); }
    return parts.join("; ");
  }
  function legend() {
    return "<div class=\"legend\">" + Object.keys(D.styles.nodes).filter(function (k) { return k; }).map(function (k) {
      var st = D.styles.nodes[k];
      return "<span><i style=\"background:" + st.fill + ";border-color:" + st.stroke + "\"></i>" + esc(st.label) + "</span>";
    }).join("") + "<span><i style=\"border-color:#ea580c;border-width:3px\"></i>critical path</span>" +
      "<span>\u21ba reset by lineage</span><span>\u2691 late results</span></div>";
  }
  var opened = null;
  function openVersion(num) {
    var ver = null;
    for (var i = 0; i < D.versions.length; i++) { if (D.versions[i].v === num) { ver = D.versions[i]; break; } }
    if (!ver) { return; }
    if (opened) { var old = document.getElementById("mark-v" + opened); if (old) { old.classList.remove("open"); } }
    opened = num;
    var mk = document.getElementById("mark-v" + num); if (mk) { mk.classList.add("open"); }
    var ch = ver.ch ? changesOf(ver.ch) : null, html = [];
    html.push("<h3 id=\"version-title\">v" + ver.v + " \u00b7 " + esc(ver.reason || "created") + " \u00b7 " + esc(ver.actor) +
      " \u00b7 " + esc(when(ver.ts)) + " UTC \u00b7 seq " + ver.seq + (ver.sup != null ? " \u00b7 superseded at seq " + ver.sup : " \u00b7 active") + "</h3>");
    if (traceOf(ver.seq)) { html.push("<p id=\"version-trace\" class=\"meta\">trace " + esc(traceOf(ver.seq)) + "</p>"); }
    if (ver.why) { html.push("<p id=\"version-why\">" + esc(ver.why) + "</p>"); }
    if (ver.obs.length) { html.push("<b>observations</b>" + list(ver.obs.map(esc))); }
    if (ver.causes.length) {
      html.push("<b>caused by</b>" + list(ver.causes.map(function (c) { return "seq " + c[0] + " " + esc(c[1]) + (c[2] ? " " + esc(c[2]) : ""); })));
    }
    html.push(legend() + "<div id=\"graph\">" + graphSvg(ver) + "</div>");
    var late = D.orphans.filter(function (o) { return o.plan_version === ver.v; });
    if (ch) {
      html.push("<div class=\"cols\" id=\"version-diff\"><div><b>kept</b> " + (ch.kept.length ? esc(ch.kept.join(", ")) : "<span class=\"empty\">none</span>") +
        "<br><b>added</b> " + (ch.added.length ? esc(ch.added.join(", ")) : "<span class=\"empty\">none</span>") +
        "<br><b>removed</b>" + list(ch.removed.map(function (c) { return esc(c.step + ": " + why(c)); })) + "</div>" +
        "<div><b>reset</b>" + list(ch.reset.map(function (c) { return esc(c.step + ": " + why(c)); })) +
        "<b>criteria reset</b>" + list(ch.criteria_reset.map(function (c) { return esc(c.step + ": " + (c.cause || "")); })) + "</div></div>");
    }
    function lateItem(o) {
      return esc("seq " + o.seq + " " + o.type + " " + o.step + " attempt " + o.attempt + " (" + o.why +
        ", arrived in v" + o.active_version + ")");
    }
    if (ver.v > 1) {
      var replaced = D.orphans.filter(function (o) { return o.plan_version === ver.v - 1; });
      html.push("<b>late results for v" + (ver.v - 1) + ", the version this replan replaced</b>" + list(replaced.map(lateItem)));
    }
    html.push("<b>late results stamped v" + ver.v + "</b> (\u2691 on the graph)" + list(late.map(lateItem)));
    panel.innerHTML = html.join("");
    if (picked) { pickNode(picked); }
  }

  var picked = "";
  var start = /^#v(\d+)$/.exec(location.hash);
  openVersion(start ? +start[1] : D.version);
  setTimeout(drawRest, 0);  /* the header, the strip and one graph paint first */

  function drawRest() {
  /* timeline: a time axis, a lane per step (its title, wrapped), each attempt a bar with its duration, replans
     as lines in their reason's colour, and marks for repairs, abandons, lease expiries and approvals */
  var T = D.timeline, tl = section("Timeline", "timeline");
  var laneIds = T.lanes.map(function (i) { return S[i]; });
  var titleOf = {};
  D.versions.forEach(function (ver) { nodesOf(ver).forEach(function (nd) { titleOf[nd.id] = nd.title; }); });
  var options = laneIds.slice().sort().map(function (id) { return "<option>" + esc(id) + "</option>"; }).join("");
  var markNames = {repair: "repair (a crash's torn tail cut off)", abandon: "abandoned", lease_expired: "lease expired",
    approval_requested: "approval asked", approval_granted: "approval granted", approval_denied: "approval denied"};
  tl.innerHTML = "<div class=\"filters\"><label><input type=\"checkbox\" id=\"filter-failed\"> failed only</label>" +
    "<label><input type=\"checkbox\" id=\"filter-superseded\"> superseded only</label>" +
    "<label>step <select id=\"filter-step\"><option value=\"\">all steps</option>" + options + "</select></label>" +
    "<span class=\"meta\" id=\"lane-count\"></span></div><div class=\"legend\" id=\"mark-legend\">" +
    Object.keys(MARKS).map(function (k) {
      return "<span><i class=\"mk\" style=\"background:" + MARKS[k] + ";border-color:" + MARKS[k] + "\"></i>" + esc(markNames[k] || k) + "</span>";
    }).join("") + "</div><div id=\"lanes\"></div><div id=\"tip\"></div>";
  var lanesBox = document.getElementById("lanes");
  var LABEL = 220, W = Math.max(600, (lanesBox.clientWidth || 1200) - LABEL - 30), end = Math.max(T.end, 1);
  function X(ms) { return ms / end * W; }
  function span(ms) {  /* a duration in words: 850 ms, 4.2 s, 3 min 5 s, 2 h 10 min, 3 d 4 h */
    if (ms < 1000) { return Math.round(ms) + " ms"; }
    var s = ms / 1000;
    if (s < 60) { return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s"; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m + " min" + (Math.round(s % 60) ? " " + Math.round(s % 60) + " s" : ""); }
    var h = Math.floor(m / 60);
    if (h < 24) { return h + " h" + (m % 60 ? " " + (m % 60) + " min" : ""); }
    return Math.floor(h / 24) + " d" + (h % 24 ? " " + (h % 24) + " h" : "");
  }
  function ticks() {  /* round steps, about one per 110 pixels */
    var want = end / Math.max(2, Math.floor(W / 110)), steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4,
      15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5];
    var step = steps[steps.length - 1];
    for (var i = 0; i < steps.length; i++) { if (steps[i] >= want) { step = steps[i]; break; } }
    var out = [];
    for (var t = 0; t <= end + 1e-9; t += step) { out.push(t); }
    return out;
  }
  var axis = "<div class=\"axis-row\"><span class=\"label\">" + esc(when(T.t0)) + " UTC</span><svg id=\"axis\" width=\"" + W +
    "\" height=\"24\">" + ticks().map(function (t) {
      var x = X(t);
      return "<line class=\"tick\" x1=\"" + x.toFixed(1) + "\" x2=\"" + x.toFixed(1) + "\" y1=\"16\" y2=\"24\"/><text class=\"tick-label\" x=\"" +
        Math.min(x, W - 2).toFixed(1) + "\" y=\"12\" text-anchor=\"" + (x < 1 ? "start" : x > W - 30 ? "end" : "middle") + "\">" +
        (t === 0 ? "0" : "+" + span(t)) + "</text>";
    }).join("") + "</svg></div>";
  var perLane = laneIds.map(function () { return {bars: [], failed: false, superseded: false}; });
  var startMs = 0, version = 0, traced = {};
  (T.at || []).forEach(function (r) { traced[r[0]] = r; });
  function traceAttributes(r) {  /* the trace contexts of an attempt's start and result, when they carried one */
    if (!r) { return ""; }
    return (r[1] != null ? " data-trace=\"" + esc(traceOf(r[1])) + "\"" : "") +
      (r[2] != null ? " data-result-trace=\"" + esc(traceOf(r[2])) + "\"" : "");
  }
  for (var k = 0; k < T.a.length; k += 6) {
    var a = T.a.slice(k, k + 6);
    startMs += a[1]; version += a[5];
    var o = S[a[3]], lane = perLane[a[0]];
    var dur = a[2] < 0 ? T.end - startMs : a[2];
    var x = X(startMs), w = Math.max(X(startMs + dur) - x, 1.5);
    var label = (a[4] > 1 ? "#" + a[4] + " " : "") + span(dur) + (a[2] < 0 ? "\u2026" : "");
    if (o === "failed" || o === "blocked") { lane.failed = true; }
    if (o === "superseded") { lane.superseded = true; }
    lane.bars.push("<rect class=\"bar\" x=\"" + x.toFixed(1) + "\" y=\"3\" width=\"" + w.toFixed(1) + "\" height=\"14\" data-outcome=\"" + o +
      "\" data-attempt=\"" + a[4] + "\" data-version=\"" + version + "\" data-duration=\"" + esc(span(dur)) + "\" data-running=\"" + (a[2] < 0) + "\"" +
      traceAttributes(traced[k / 6]) + "/>" +
      (w >= label.length * 6 + 6 ? "<text class=\"dur\" x=\"" + (x + 3).toFixed(1) + "\" y=\"14\">" + esc(label) + "</text>" : ""));
  }
  T.late.forEach(function (m) {
    var lane = perLane[m[0]];
    lane.superseded = true;
    lane.bars.push("<circle class=\"late\" cx=\"" + X(m[1]).toFixed(1) + "\" cy=\"10\" r=\"4\" data-seq=\"" + m[5] +
      "\" data-version=\"" + m[3] + "\" data-type=\"" + esc(S[m[2]]) + "\"" +
      (traceOf(m[5]) ? " data-trace=\"" + esc(traceOf(m[5])) + "\"" : "") + "/>");
  });
  var across = [];
  T.marks.forEach(function (m) {  /* [ms, kind, lane or -1, seq, text] */
    var kind = S[m[1]], x = X(m[0]).toFixed(1), colour = MARKS[kind] || "#52525b";
    var attrs = " data-kind=\"" + esc(kind) + "\" data-seq=\"" + m[3] + "\" data-text=\"" + esc(S[m[4]]) + "\"";
    if (m[2] < 0) {
      across.push("<line class=\"mark-line\"" + attrs + " x1=\"" + x + "\" x2=\"" + x + "\" y1=\"0\" y2=\"100%\" stroke=\"" + colour + "\"/>");
      return;
    }
    var shape = kind === "abandon" ? "<path class=\"tmark\"" + attrs + " d=\"M" + (x - 4) + ",6 l8,8 m0,-8 l-8,8\" stroke=\"" + colour + "\"/>"
      : kind === "lease_expired" ? "<path class=\"tmark\"" + attrs + " d=\"M" + (x - 5) + ",4 h10 l-10,12 h10 z\" fill=\"" + colour + "\"/>"
      : "<path class=\"tmark\"" + attrs + " d=\"M" + x + ",3 l6,7 l-6,7 l-6,-7 z\" fill=\"" + colour + "\"/>";
    perLane[m[2]].bars.push(shape);
  });
  lanesBox.innerHTML = axis + perLane.map(function (lane, i) {
    var id = laneIds[i], title = titleOf[id];
    return "<div class=\"lane\" data-step-id=\"" + esc(id) + "\" data-failed=\"" + lane.failed + "\" data-superseded=\"" +
      lane.superseded + "\"><span class=\"label\" title=\"" + esc(id) + "\">" + esc(title || id) + "</span><svg width=\"" +
      W + "\" height=\"20\">" + lane.bars.join("") + "</svg></div>";
  }).join("") + "<svg id=\"replans\" width=\"" + W + "\" height=\"100%\">" + T.replans.map(function (r) {
    var x = X(r[0]).toFixed(1), reason = str(r[3]) || "created";
    return "<line class=\"replan\" data-version=\"" + r[1] + "\" data-reason=\"" + esc(reason) + "\" stroke=\"" + (REASONS[reason] || "#52525b") +
      "\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"0\" y2=\"100%\"/>";
  }).join("") + across.join("") + "</svg>";
  var replansSvg = document.getElementById("replans");
  function fitReplans() { replansSvg.setAttribute("height", String(lanesBox.scrollHeight)); }
  var tip = document.getElementById("tip");
  lanesBox.addEventListener("mousemove", function (ev) {
    var t = ev.target, lane = t.closest ? t.closest(".lane") : null;
    var kind = t.getAttribute ? t.getAttribute("data-kind") : null;
    if (kind) {
      tip.textContent = (markNames[kind] || kind) + " (seq " + t.getAttribute("data-seq") + "): " + t.getAttribute("data-text");
    } else if (!lane || (t.tagName !== "rect" && t.tagName !== "circle")) { tip.style.display = "none"; return; }
    else {
      var id = lane.getAttribute("data-step-id");
      tip.textContent = t.tagName === "rect" ? id + " attempt " + t.getAttribute("data-attempt") + " in v" + t.getAttribute("data-version") +
        ": " + t.getAttribute("data-outcome") + ", " + t.getAttribute("data-duration") + (t.getAttribute("data-running") === "true" ? " so far" : "")
        : id + ": late " + t.getAttribute("data-type") + " stamped v" + t.getAttribute("data-version") + " (seq " + t.getAttribute("data-seq") + ")";
      var started = t.getAttribute("data-trace"), ended = t.getAttribute("data-result-trace");
      if (started) { tip.textContent += " \u00b7 trace " + started; }
      if (ended && ended !== started) { tip.textContent += " \u00b7 result's trace " + ended; }
    }
    tip.style.left = ev.clientX + 12 + "px"; tip.style.top = ev.clientY + 12 + "px"; tip.style.display = "block";
  });

  /* criteria matrix */
  var crit = section("Acceptance criteria", "criteria");
  var rows = D.criteria.map(function (c) {
    var cells = D.versions.map(function (ver, i) {
      var st = null;
      ver.crit.forEach(function (p) { if (S[p[0]] === c.id) { st = S[p[1]]; } });
      return st ? "<rect class=\"cell\" x=\"" + i * mw + "\" y=\"0\" width=\"" + Math.max(mw, 2) + "\" height=\"14\" data-version=\"" + ver.v +
        "\" data-status=\"" + st + "\"/>" : "";
    }).join("");
    return "<tr data-criterion=\"" + esc(c.id) + "\"><td><code>" + esc(c.id) + "</code></td><td>" + esc(c.description) + "</td><td>" +
      "<span class=\"pill " + (c.status === "passed" ? "ok" : c.status === "failed" ? "bad" : "") + "\">" + esc(c.status) + "</span></td><td>" +
      esc(c.evidence || "") + "</td><td class=\"matrix-cell\"><svg class=\"matrix\" width=\"100%\" height=\"14\" viewBox=\"0 0 " +
      Math.max(n * mw, 10) + " 14\" preserveAspectRatio=\"none\">" + cells + "</svg></td></tr>";
  });
  crit.innerHTML = rows.length ? "<table><thead><tr><th>criterion</th><th>description</th><th>now</th><th>evidence</th>" +
    "<th>verdict at the end of each version</th></tr></thead><tbody>" + rows.join("") + "</tbody></table>" : "<div class=\"empty\">no criteria</div>";

  /* orphans */
  var orph = section("Late results (orphans)", "orphans");
  orph.innerHTML = D.orphans.length ? "<table><thead><tr><th>seq</th><th>step</th><th>result</th><th>stamped</th><th>arrived</th>" +
    "<th>why</th><th>step now</th><th>evidence / reason</th></tr></thead><tbody>" + D.orphans.map(function (o) {
      return "<tr class=\"orphan\" data-step-id=\"" + esc(o.step) + "\" data-why=\"" + esc(o.why) + "\"><td>" + o.seq + "</td><td><code>" +
        esc(o.step) + "</code></td><td>" + esc(o.type.replace("step.", "")) + "</td><td>v" + o.plan_version + " attempt " + o.attempt +
        "</td><td>v" + o.active_version + "</td><td>" + esc(o.why) + "</td><td>" + esc(o.status_now || "not in plan") + "</td><td>" +
        esc((o.evidence || []).join("; ") || o.reason || "") + "</td></tr>";
    }).join("") + "</tbody></table>" : "<div class=\"empty\">no late results</div>";

  /* resume receipt */
  var R = D.receipt, rc = section("Resume receipt", "receipt");
  rc.innerHTML = "<div class=\"card\"><div><b>verdict</b> <span class=\"pill\" id=\"verdict\">" + esc(R.verdict) + "</span> \u00b7 <b>next</b> " +
    esc(R.next) + "</div><div><b>ready</b> " + esc(R.ready.join(", ") || "none") + "</div><div><b>in doubt</b> " +
    esc(R.in_doubt.map(function (d) { return d.step + " (attempt " + d.attempt + ")"; }).join(", ") || "none") + "</div><div><b>blocked</b> " +
    esc(R.blocked.map(function (b) { return b.step; }).join(", ") || "none") + "</div><div><b>criteria unverified</b> " +
    esc(R.criteria_unverified.join(", ") || "none") + "</div><div><b>done</b> " + R.done.length + " steps \u00b7 <b>advice</b> " +
    esc(R.advice || "none") + "</div></div>";

  function applyFilters() {
    var failed = document.getElementById("filter-failed").checked;
    var sup = document.getElementById("filter-superseded").checked;
    var step = document.getElementById("filter-step").value;
    var lanes = lanesBox.querySelectorAll(".lane[data-step-id]"), shown = 0;
    for (var i = 0; i < perLane.length; i++) {
      var lane = perLane[i];
      var hide = (failed && !lane.failed) || (sup && !lane.superseded) || (step && laneIds[i] !== step);
      lanes[i].classList.toggle("hidden", !!hide);
      if (!hide) { shown++; }
    }
    var trs = document.querySelectorAll("tr.orphan");
    for (var j = 0; j < trs.length; j++) {
      trs[j].classList.toggle("hidden", !!step && trs[j].getAttribute("data-step-id") !== step);
    }
    picked = step;
    pickNode(step);
    document.getElementById("lane-count").textContent = shown + " of " + perLane.length + " steps shown";
    fitReplans();
  }
  ["filter-failed", "filter-superseded", "filter-step"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", applyFilters);
  });
  applyFilters();
  document.body.setAttribute("data-ready", "true");
  }

  /* filters */
  function pickNode(id) {
    var nodes = document.querySelectorAll("#graph .node");
    for (var i = 0; i < nodes.length; i++) {
      var on = nodes[i].getAttribute("data-step-id") === id;
      nodes[i].classList.toggle("picked", !!id && on);
      nodes[i].classList.toggle("dim", !!id && !on);
    }
  }
  }
})();
