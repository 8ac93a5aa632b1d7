// agentgym report: lists episodes a page at a time and renders one trajectory on demand.
// Trajectories are gzip-compressed JSON chunks in <script id="chunk-N"> tags, decompressed when opened.
// Everything from a run (model text, tool output) enters the DOM as text nodes, never as HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const IX = DATA.index;
  const N = IX.run.length;
  const PAGE = 50;
  const CACHE_CHUNKS = 6;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const fmt = (x, d) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));

  // ------------------------------------------------------------------ chunks
  const chunkCache = new Map();
  async function loadChunk(i) {
    if (chunkCache.has(i)) {
      const hit = chunkCache.get(i);
      chunkCache.delete(i);
      chunkCache.set(i, hit);
      return hit;
    }
    const b64 = document.getElementById("chunk-" + i).textContent;
    const raw = atob(b64);
    const bytes = new Uint8Array(raw.length);
    for (let k = 0; k < raw.length; k++) bytes[k] = raw.charCodeAt(k);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const list = JSON.parse(await new Response(stream).text());
    chunkCache.set(i, list);
    while (chunkCache.size > CACHE_CHUNKS) chunkCache.delete(chunkCache.keys().next().value);
    return list;
  }
  async function trajectory(i) {
    const list = await loadChunk(Math.floor(i / DATA.chunk));
    return list[i % DATA.chunk];
  }

  // ------------------------------------------------------------------ pager
  function pager(host, page, pages, total, label, go) {
    host.replaceChildren(
      el("button", { type: "button", disabled: page <= 0, onclick: () => go(page - 1) }, "‹ prev"),
      el("span", {}, `page ${pages ? page + 1 : 0} of ${pages} · ${total.toLocaleString()} ${label}`),
      el("button", { type: "button", disabled: page >= pages - 1, onclick: () => go(page + 1) }, "next ›"),
    );
  }

  // ------------------------------------------------------------------ per-task table
  const taskState = { page: 0, filter: "", differ: false };
  function taskRows() {
    const out = [];
    const f = taskState.filter.toLowerCase();
    DATA.tasks.tasks.forEach((task, i) => {
      if (f && !task.toLowerCase().includes(f)) return;
      const cells = DATA.tasks.cells[i];
      if (taskState.differ) {
        const rates = cells.filter((c) => c).map((c) => c[1] / c[0]);
        if (rates.length < 2 || rates.every((r) => r === rates[0])) return;
      }
      out.push(i);
    });
    return out;
  }
  function renderTasks() {
    const rows = taskRows();
    const pages = Math.ceil(rows.length / PAGE);
    taskState.page = Math.max(0, Math.min(taskState.page, pages - 1));
    const head = el("tr", {}, el("th", {}, "task"), ...DATA.runs.map((r) => el("th", {}, r)));
    const body = rows.slice(taskState.page * PAGE, (taskState.page + 1) * PAGE).map((i) => {
      const cells = DATA.tasks.cells[i].map((c) => {
        if (!c) return el("td", {}, "–");
        const [n, ok, reward] = c;
        const cls = ok === n ? "cell-ok" : ok === 0 ? "cell-bad" : "cell-mixed";
        return el("td", { class: cls }, `${ok}/${n} success · reward ${fmt(reward, 3)}`);
      });
      return el("tr", {}, el("td", {}, el("code", {}, DATA.tasks.tasks[i])), ...cells);
    });
    document.getElementById("task-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
    pager(document.getElementById("task-pager"), taskState.page, pages, rows.length, "tasks", (p) => {
      taskState.page = p;
      renderTasks();
    });
  }

  // ------------------------------------------------------------------ episode list
  const epState = { page: 0, run: "", result: "", outcome: "", search: "", failure: null, selected: -1 };
  function episodeRows() {
    const out = [];
    const s = epState.search.toLowerCase();
    for (let i = 0; i < N; i++) {
      if (epState.run !== "" && IX.run[i] !== Number(epState.run)) continue;
      if (epState.result !== "" && IX.success[i] !== Number(epState.result)) continue;
      if (epState.outcome !== "" && IX.outcome[i] !== epState.outcome) continue;
      if (epState.failure !== null && IX.failure[i] !== epState.failure) continue;
      if (s && !IX.task[i].toLowerCase().includes(s) && !(IX.failure[i] || "").toLowerCase().includes(s)) continue;
      out.push(i);
    }
    return out;
  }
  function renderEpisodes() {
    const rows = episodeRows();
    const pages = Math.ceil(rows.length / PAGE);
    epState.page = Math.max(0, Math.min(epState.page, pages - 1));
    const head = el("tr", {}, ...["#", "run", "task", "seed", "outcome", "result", "reward", "turns", "tokens",
      "tool errors"].map((h) => el("th", {}, h)));
    const body = rows.slice(epState.page * PAGE, (epState.page + 1) * PAGE).map((i) => el("tr", {
      class: "episode-row" + (i === epState.selected ? " selected" : ""), tabindex: "0", "data-index": String(i),
      onclick: () => openEpisode(i),
      onkeydown: (e) => { if (e.key === "Enter") openEpisode(i); },
      title: IX.failure[i] || "",
    },
      el("td", {}, String(i)), el("td", {}, DATA.runs[IX.run[i]]), el("td", {}, el("code", {}, IX.task[i])),
      el("td", {}, IX.seed[i] === null ? "–" : String(IX.seed[i])),
      el("td", { class: IX.outcome[i] === "terminated" ? "" : "warn" }, IX.outcome[i]),
      el("td", { class: IX.success[i] ? "ok" : "bad" }, IX.success[i] ? "✓" : "✗"),
      el("td", {}, fmt(IX.reward[i], 3)), el("td", {}, String(IX.turns[i])),
      el("td", {}, IX.tokens[i].toLocaleString()), el("td", { class: IX.errors[i] ? "bad" : "" }, String(IX.errors[i])),
    ));
    document.getElementById("episode-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
    pager(document.getElementById("episode-pager"), epState.page, pages, rows.length, "episodes", (p) => {
      epState.page = p;
      renderEpisodes();
    });
    const chip = document.getElementById("ep-failure");
    chip.hidden = epState.failure === null;
    chip.textContent = epState.failure === null ? "" : `failure: ${epState.failure} ✕`;
  }

  // ------------------------------------------------------------------ one trajectory
  function content(value) {
    if (value === null || value === undefined) return [];
    if (typeof value === "string") return value ? [el("pre", {}, value)] : [];
    return value.map((part) => {
      if (part.type === "text") return el("pre", {}, part.text);
      const url = (part.image_url && part.image_url.url) || "";
      if (url.startsWith("data:image/")) return el("img", { class: "inline-image", src: url, alt: "image", loading: "lazy" });
      return el("pre", {}, `[image not embedded: ${url.slice(0, 200)}]`);
    });
  }
  function textOf(value) {
    if (!value) return "";
    if (typeof value === "string") return value;
    return value.filter((p) => p.type === "text").map((p) => p.text).join("");
  }
  function images(value) {
    return Array.isArray(value) ? value.filter((p) => p.type !== "text") : [];
  }
  function pretty(args) {
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (e) { return args; }
  }
  function short(text, n) {
    const line = (text || "").replace(/\s+/g, " ").trim();
    return line.length > n ? line.slice(0, n) + "…" : line;
  }
  function message(m) {
    const box = el("div", { class: `msg role-${m.role}` }, el("div", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : "")));
    if (m.role === "tool") {
      const text = textOf(m.content);
      box.append(el("details", { class: "tool-output" },
        el("summary", {}, `output of ${m.name || "tool"} (${text.length.toLocaleString()} chars): ${short(text, 90)}`),
        el("pre", {}, text)));
      box.append(...content(images(m.content)));
      return box;
    }
    if (m.role === "system") {
      box.append(el("details", { class: "fold" }, el("summary", {}, short(textOf(m.content), 100)), ...content(m.content)));
      return box;
    }
    box.append(...content(m.content));
    for (const call of m.tool_calls || []) {
      box.append(el("details", { class: "tool-call" },
        el("summary", {}, "call ", el("code", {}, call.name), ` (${short(call.arguments, 80)})`),
        el("pre", {}, pretty(call.arguments)), el("div", { class: "note" }, `id ${call.id}`)));
    }
    return box;
  }
  function jsonFold(label, value) {
    if (!value || (typeof value === "object" && Object.keys(value).length === 0)) return null;
    return el("details", { class: "fold" }, el("summary", {}, label), el("pre", {}, JSON.stringify(value, null, 2)));
  }
  function renderTrajectory(i, t) {
    const usage = t.turns.reduce((u, turn) => ({
      p: u.p + turn.usage.prompt_tokens, c: u.c + turn.usage.completion_tokens, cost: u.cost + turn.usage.cost_usd,
    }), { p: 0, c: 0, cost: 0 });
    const comps = Object.entries(t.reward_components || {}).map(([k, v]) => `${k} ${fmt(v, 3)}`).join(", ");
    const meta = el("dl", { class: "meta" },
      el("dt", {}, "run"), el("dd", {}, `${DATA.runs[IX.run[i]]} · policy ${t.policy || "–"} · seed ${t.seed ?? "–"}`),
      el("dt", {}, "outcome"), el("dd", { class: t.outcome === "terminated" ? "" : "warn" }, t.outcome),
      el("dt", {}, "reward"), el("dd", {}, `${fmt(t.reward, 4)} (outcome ${fmt(t.outcome_reward, 4)})`),
      el("dt", {}, "components"), el("dd", {}, comps || "–"),
      el("dt", {}, "failure"), el("dd", { class: t.failure ? "bad" : "" }, t.failure || "–"),
      el("dt", {}, "time"), el("dd", {}, `${fmt(t.seconds, 2)} s, sandbox ${fmt(t.sandbox_seconds, 2)} s`),
      el("dt", {}, "tokens"), el("dd", {}, `${usage.p.toLocaleString()} prompt + ${usage.c.toLocaleString()} completion, $${fmt(usage.cost, 4)}`),
    );
    const turns = t.turns.map((turn, k) => {
      const r = turn.reward;
      const head = el("div", { class: "turn-head" }, el("strong", {}, `Turn ${k + 1}`),
        el("span", { class: "badge reward" + (r > 0 ? " pos" : r < 0 ? " neg" : "") }, `reward ${r >= 0 ? "+" : ""}${fmt(r, 3)}`),
        ...turn.tool_errors.map((e) => el("span", { class: "badge error" }, e)),
        el("span", {}, `policy ${fmt(turn.policy_seconds, 2)} s · env ${fmt(turn.env_seconds, 2)} s`));
      return el("div", { class: "turn", "data-turn": String(k) }, head, message(turn.action),
        ...turn.observation.map(message), jsonFold("turn info", turn.info));
    });
    return el("div", { class: "trajectory", "data-index": String(i) },
      el("h3", {}, t.task_id), meta, jsonFold("episode info", t.info),
      el("div", { class: "opening" }, ...t.messages.map(message)), ...turns);
  }
  let opening = 0;
  async function openEpisode(i) {
    const ticket = ++opening;
    epState.selected = i;
    document.querySelectorAll("tr.episode-row.selected").forEach((r) => r.classList.remove("selected"));
    const row = document.querySelector(`tr.episode-row[data-index="${i}"]`);
    if (row) row.classList.add("selected");
    const viewer = document.getElementById("viewer");
    viewer.replaceChildren(el("p", { class: "hint" }, "loading…"));
    try {
      const t = await trajectory(i);
      if (ticket !== opening) return;
      viewer.replaceChildren(renderTrajectory(i, t));
      viewer.scrollTop = 0;
      history.replaceState(null, "", `#episode-${i}`);
    } catch (e) {
      viewer.replaceChildren(el("p", { class: "bad" }, `could not open episode ${i}: ${e}`));
    }
  }

  // ------------------------------------------------------------------ wiring
  function setup() {
    const runSel = document.getElementById("ep-run");
    runSel.append(el("option", { value: "" }, "all runs"), ...DATA.runs.map((r, i) => el("option", { value: String(i) }, r)));
    const outcomes = [...new Set(IX.outcome)].sort();
    document.getElementById("ep-outcome").append(...outcomes.map((o) => el("option", { value: o }, o)));
    const bind = (id, key, event) => document.getElementById(id).addEventListener(event, (e) => {
      epState[key] = e.target.value;
      epState.page = 0;
      renderEpisodes();
    });
    bind("ep-run", "run", "change");
    bind("ep-result", "result", "change");
    bind("ep-outcome", "outcome", "change");
    bind("ep-search", "search", "input");
    document.getElementById("ep-failure").addEventListener("click", () => {
      epState.failure = null;
      renderEpisodes();
    });
    document.querySelectorAll("a.failure-link").forEach((a) => a.addEventListener("click", (e) => {
      e.preventDefault();
      // Every episode that failed so, whatever the other filters said.
      Object.assign(epState, { failure: a.dataset.failure, run: a.dataset.run, result: "", outcome: "", search: "" });
      runSel.value = a.dataset.run;
      for (const id of ["ep-result", "ep-outcome", "ep-search"]) document.getElementById(id).value = "";
      epState.page = 0;
      renderEpisodes();
      document.getElementById("episodes").scrollIntoView();
    }));
    document.getElementById("task-filter").addEventListener("input", (e) => {
      taskState.filter = e.target.value;
      taskState.page = 0;
      renderTasks();
    });
    document.getElementById("task-differ").addEventListener("change", (e) => {
      taskState.differ = e.target.checked;
      taskState.page = 0;
      renderTasks();
    });
    renderTasks();
    renderEpisodes();
    const m = /^#episode-(\d+)$/.exec(location.hash);
    if (m && Number(m[1]) < N) {
      const i = Number(m[1]);
      epState.page = Math.floor(episodeRows().indexOf(i) / PAGE);
      renderEpisodes();
      openEpisode(i);
    }
  }
  setup();
})();
