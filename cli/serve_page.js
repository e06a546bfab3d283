"use strict";
// plantrail serve: the list of runs, its filters, and the server-sent events that keep it current.
// Every request goes to this page's own origin (/api/runs, /events, /runs/ID); nothing else is loaded.
(() => {
  const app = document.getElementById("app");
  const OUTCOMES = ["", "open", "complete", "paused", "failed", "cancelled"];
  const REASONS = ["", "new_constraint", "failed_assumption", "repeated_tool_failure", "no_ready_step",
    "retries_exhausted", "coverage_gap", "budget_change", "user_request", "agent_revision"];
  const SORTS = ["last_activity", "run", "plan_version", "replans", "orphans"];
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c);
    return node;
  };
  const params = new URLSearchParams(location.search);
  params.delete("token");
  let offset = Number(params.get("offset") || 0);
  let seen = new Map();  // run id -> last_seq shown, to mark the rows that changed

  const select = (name, values) => {
    const s = el("select", {name});
    for (const v of values) s.append(el("option", {value: v, text: v || "any"}));
    s.value = params.get(name) || values[0];
    return s;
  };
  const input = (name, placeholder) => {
    const i = el("input", {name, placeholder, type: "search"});
    i.value = params.get(name) || "";
    return i;
  };
  const orphans = el("input", {type: "checkbox", name: "has_orphans"});
  orphans.checked = params.get("has_orphans") === "1";
  const form = el("form", {class: "filters"},
    el("label", {}, "outcome", select("outcome", OUTCOMES)),
    el("label", {}, "replan reason", select("reason", REASONS)),
    el("label", {}, "agent", input("agent", "claude-code, codex, mcp …")),
    el("label", {}, "search goals and titles", input("search", "text")),
    el("label", {}, "active since (UTC)", input("since", "2026-11-29T21:00")),
    el("label", {class: "check"}, orphans, "late results only"),
    el("label", {}, "sort", select("sort", SORTS)),
  );
  const status = el("span", {id: "status", text: "connecting"});
  const body = el("tbody");
  const table = el("table", {id: "runs"}, el("thead", {}, el("tr", {},
    ...["run", "goal", "agent", "outcome", "plan", "last activity (UTC)", "replans", "late", "seq", "damage"]
      .map(h => el("th", {text: h})))), body);
  const info = el("span", {class: "meta"});
  const prev = el("button", {type: "button", text: "← newer"});
  const next = el("button", {type: "button", text: "older →"});
  app.append(el("h1", {text: "plantrail runs"}),
    el("div", {class: "meta"}, el("code", {text: app.dataset.store}), " ", status),
    form, table, el("div", {class: "pager"}, prev, next, info));

  const query = () => {
    const q = new URLSearchParams();
    for (const f of form.elements) {
      if (f.type === "checkbox") { if (f.checked) q.set(f.name, "1"); } else if (f.value) q.set(f.name, f.value);
    }
    if (q.get("sort") === "last_activity") q.delete("sort");
    if (offset) q.set("offset", String(offset));
    return q;
  };
  const cell = (text, cls) => el("td", cls ? {class: cls, text} : {text});
  const draw = (answer) => {
    body.replaceChildren();
    const fresh = new Map();
    for (const r of answer.runs) {
      const outcome = r.outcome || (r.run === null ? "" : "open");
      const link = el("a", {href: "runs/" + encodeURIComponent(r.id), text: r.run || r.id});
      const row = el("tr", {"data-run": r.id, "data-seq": String(r.last_seq)},
        el("td", {}, link), cell(r.goal || "", "goal"), cell(r.agent || "", "agent"),
        el("td", {}, el("span", {class: "pill " + outcome, text: outcome})),
        cell("v" + r.plan_version, "num"), cell((r.last_activity || "").slice(0, 19).replace("T", " "), "when"),
        cell(String(r.replans), "num"), cell(String(r.orphans), "num"), cell(String(r.last_seq), "num"),
        cell(r.damage || "", "damage"));
      if (seen.has(r.id) && seen.get(r.id) !== r.last_seq) row.classList.add("fresh");
      fresh.set(r.id, r.last_seq);
      body.append(row);
    }
    seen = fresh;
    if (!answer.runs.length) body.append(el("tr", {}, el("td", {colspan: "10", class: "empty", text: "no runs"})));
    prev.disabled = offset === 0;
    next.disabled = !answer.more;
    info.textContent = answer.runs.length ? `rows ${offset + 1}–${offset + answer.runs.length}` : "";
    document.body.dataset.drawn = String(Number(document.body.dataset.drawn || 0) + 1);
  };
  let loading = null, again = false;
  const load = async () => {
    if (loading) { again = true; return loading; }
    loading = (async () => {
      const q = query();
      history.replaceState(null, "", q.toString() ? "?" + q : location.pathname);
      try {
        const answer = await (await fetch("api/runs?" + q, {headers: {Accept: "application/json"}})).json();
        if (answer.ok) draw(answer);
        else info.replaceChildren(el("span", {class: "error", text: `${answer.error.code}: ${answer.error.message}`}));
      } catch (e) {
        info.replaceChildren(el("span", {class: "error", text: "the server did not answer"}));
      }
    })();
    await loading;
    loading = null;
    if (again) { again = false; await load(); }
  };
  let typing = 0;
  form.addEventListener("input", (e) => {
    offset = 0;
    clearTimeout(typing);
    typing = setTimeout(load, e.target.type === "search" ? 250 : 0);
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); load(); });
  prev.addEventListener("click", () => { offset = Math.max(0, offset - 50); load(); });
  next.addEventListener("click", () => { offset += 50; load(); });

  const events = new EventSource("events");
  events.addEventListener("open", () => { status.textContent = "live"; status.className = "live"; });
  events.addEventListener("error", () => { status.textContent = "reconnecting"; status.className = "down"; });
  events.addEventListener("runs", () => load());
  events.addEventListener("failed", (e) => {
    const problem = JSON.parse(e.data);
    status.textContent = `not following: ${problem.code}`; status.className = "down";
    events.close();
  });
  load();
})();
