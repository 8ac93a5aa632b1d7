// agentgym report: draws the plots, lists episodes a page at a time and renders trajectories on demand.
// Trajectories are gzip-compressed JSON chunks in <script id="chunk-N"> tags, decompressed when opened.
// Everything from a run (model text, tool output) enters the DOM as text nodes, never as HTML.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const IX = DATA.index;
  const N = IX.run.length;
  const CHUNKS = Math.ceil(N / DATA.chunk);
  const PAGE = 50;
  const CACHE_CHUNKS = 6;
  const LIVE = document.querySelector('meta[name="agentgym-live"]').content;
  const STATE_KEY = "agentgym-report-state:" + location.pathname;

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
  const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });
  const collator = new Intl.Collator("en", { numeric: true });

  // ------------------------------------------------------------------ plots
  // Drawn once every plot's cell exists, so each is laid out for its own cell (not the page's width).
  function drawPlots() {
    for (const [id, spec] of Object.entries(DATA.plots)) {
      const div = document.getElementById(id);
      Plotly.newPlot(div, spec.data, spec.layout, DATA.plotConfig).then(() => { div.dataset.drawn = "1"; });
    }
  }

  // ------------------------------------------------------------------ chunks
  const chunkCache = new Map();
  async function loadChunk(i) {
    if (chunkCache.has(i)) {
      const hit = chunkCache.get(i);
      chunkCache.delete(i);
      chunkCache.set(i, hit);
      return hit;
    }
    const raw = atob(document.getElementById("chunk-" + i).textContent);
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

  // ------------------------------------------------------------------ full-text search
  // The text a search looks in: messages, tool-call names and arguments (decoded), tool output, failure.
  const fullText = new Array(N);
  let indexedChunks = 0;
  let indexing = null;
  function textOf(value) {
    if (!value) return "";
    if (typeof value === "string") return value;
    return value.filter((p) => p.type === "text").map((p) => p.text).join("");
  }
  function searchable(t) {
    const parts = [t.task_id, t.failure || ""];
    const add = (m) => {
      parts.push(textOf(m.content));
      for (const call of m.tool_calls || []) {
        parts.push(call.name);
        try {
          JSON.stringify(JSON.parse(call.arguments), (k, v) => { if (typeof v === "string") parts.push(v); return v; });
        } catch (e) {
          parts.push(call.arguments);
        }
      }
    };
    t.messages.forEach(add);
    for (const turn of t.turns) {
      add(turn.action);
      turn.observation.forEach(add);
    }
    return parts.join("\n").toLowerCase();
  }
  function indexTrajectories(onProgress) {
    if (!indexing) {
      indexing = (async () => {
        for (let c = indexedChunks; c < CHUNKS; c++) {
          const list = await loadChunk(c);
          list.forEach((t, k) => { fullText[c * DATA.chunk + k] = searchable(t); });
          indexedChunks = c + 1;
          if (c % 5 === 4 || c === CHUNKS - 1) onProgress();
        }
      })();
    }
    return indexing;
  }

  // ------------------------------------------------------------------ pager
  function pager(host, page, pages, total, label, go) {
    host.replaceChildren(
      el("button", { type: "button", disabled: page <= 0, onclick: () => go(page - 1) }, "‹ prev"),
      el("span", {}, `page ${pages ? page + 1 : 0} of ${pages} · ${total.toLocaleString()} ${label}`),
      el("button", { type: "button", disabled: page >= pages - 1, onclick: () => go(page + 1) }, "next ›"),
    );
  }

  // ------------------------------------------------------------------ episodes by run and task
  let byRunTask = null;
  function episodesOf(run, task) {
    if (!byRunTask) {
      byRunTask = new Map();
      for (let i = 0; i < N; i++) {
        const key = IX.run[i] + "\u0000" + IX.task[i];
        if (!byRunTask.has(key)) byRunTask.set(key, []);
        byRunTask.get(key).push(i);
      }
    }
    return byRunTask.get(run + "\u0000" + task) || [];
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
  // One table per env, with that env's runs as its columns; the pager pages through all of them.
  function taskTable(env, rows) {
    const runs = DATA.tasks.envs[env].runs;
    const several = runs.length > 1;
    const head = el("tr", {}, el("th", {}, "task"), ...runs.map((r) => el("th", {}, DATA.runs[r])), several && el("th", {}, ""));
    const body = rows.map((i) => {
      const task = DATA.tasks.tasks[i];
      const cells = runs.map((run) => {
        const c = DATA.tasks.cells[i][run];
        if (!c) return el("td", {}, "–");
        const [n, ok, reward] = c;
        const cls = ok === n ? "cell-ok" : ok === 0 ? "cell-bad" : "cell-mixed";
        return el("td", { class: cls }, el("a", {
          href: "#episodes", class: "task-link", "data-run": String(run),
          onclick: (e) => { e.preventDefault(); showTaskEpisodes(task, run); },
        }, `${ok}/${n} success · reward ${fmt(reward, 3)}`));
      });
      const present = DATA.tasks.cells[i].filter((c) => c).length;
      const side = several && el("td", {}, present > 1 && el("button", {
        type: "button", class: "side-link", onclick: () => openSide(task),
      }, "side by side"));
      return el("tr", { "data-task": task }, el("td", {}, el("code", {}, task)), ...cells, side);
    });
    return el("table", { class: "grid", "data-env": DATA.tasks.envs[env].env }, el("thead", {}, head), el("tbody", {}, ...body));
  }
  function renderTasks() {
    const rows = taskRows();
    const pages = Math.ceil(rows.length / PAGE);
    taskState.page = Math.max(0, Math.min(taskState.page, pages - 1));
    const shown = rows.slice(taskState.page * PAGE, (taskState.page + 1) * PAGE);
    const parts = [];
    for (let start = 0; start < shown.length;) {
      const env = DATA.tasks.env[shown[start]];
      let end = start;
      while (end < shown.length && DATA.tasks.env[shown[end]] === env) end++;
      if (DATA.tasks.envs.length > 1) parts.push(el("h3", { class: "env-head" }, DATA.tasks.envs[env].env));
      parts.push(taskTable(env, shown.slice(start, end)));
      start = end;
    }
    document.getElementById("task-table").replaceChildren(...parts);
    pager(document.getElementById("task-pager"), taskState.page, pages, rows.length, "tasks", (p) => {
      taskState.page = p;
      renderTasks();
    });
  }

  // ------------------------------------------------------------------ episode list
  const epState = { page: 0, run: "", result: "", outcome: "", search: "", failure: null, task: null, selected: -1,
    sort: "index", desc: false };
  const COLUMNS = [
    // key, header, title, class, sort value
    ["index", "#", "episode number", "c-num", (i) => i],
    ["task", "task · run", "task id, and the run it belongs to", "c-task", null],
    ["seed", "seed", "seed", "c-seed", (i) => (IX.seed[i] === null ? -Infinity : IX.seed[i])],
    ["result", "result", "success, and the outcome when it is not terminated", "c-result", (i) => IX.success[i]],
    ["reward", "reward", "reward", "c-reward", (i) => IX.reward[i]],
    ["turns", "turns", "turns", "c-turns", (i) => IX.turns[i]],
    ["tokens", "tokens", "prompt + completion tokens", "c-tokens", (i) => IX.tokens[i]],
    ["errors", "errors", "tool errors", "c-errors", (i) => IX.errors[i]],
  ];
  function matches(i, s) {
    if (!s) return true;
    if (IX.task[i].toLowerCase().includes(s) || (IX.failure[i] || "").toLowerCase().includes(s)) return true;
    return fullText[i] !== undefined && fullText[i].includes(s);
  }
  function episodeRows() {
    const out = [];
    const s = epState.search.toLowerCase();
    for (let i = 0; i < N; i++) {
      if (epState.run !== "" && IX.run[i] !== Number(epState.run)) continue;
      if (epState.result !== "" && IX.success[i] !== Number(epState.result)) continue;
      if (epState.outcome !== "" && IX.outcome[i] !== epState.outcome) continue;
      if (epState.failure !== null && IX.failure[i] !== epState.failure) continue;
      if (epState.task !== null && IX.task[i] !== epState.task) continue;
      if (!matches(i, s)) continue;
      out.push(i);
    }
    const column = COLUMNS.find((c) => c[0] === epState.sort);
    const sign = epState.desc ? -1 : 1;
    if (epState.sort === "task") {
      out.sort((a, b) => sign * (collator.compare(IX.task[a], IX.task[b]) || IX.run[a] - IX.run[b]) || a - b);
    } else if (epState.sort !== "index" || epState.desc) {
      const value = column[4];
      out.sort((a, b) => sign * (value(a) - value(b)) || a - b);
    }
    return out;
  }
  function sortBy(key) {
    epState.desc = epState.sort === key ? !epState.desc : false;
    epState.sort = key;
    epState.page = 0;
    renderEpisodes();
  }
  function renderEpisodes() {
    const rows = episodeRows();
    const pages = Math.ceil(rows.length / PAGE);
    epState.page = Math.max(0, Math.min(epState.page, pages - 1));
    const head = el("tr", {}, ...COLUMNS.map(([key, label, title, cls]) => el("th", {
      class: cls + " sortable", title: `${title} (click to sort)`, "data-sort": key, tabindex: "0",
      "aria-sort": epState.sort === key ? (epState.desc ? "descending" : "ascending") : null,
      onclick: () => sortBy(key), onkeydown: (e) => { if (e.key === "Enter") sortBy(key); },
    }, label, epState.sort === key && el("span", { class: "sort-mark" }, epState.desc ? " ▼" : " ▲"))));
    const body = rows.slice(epState.page * PAGE, (epState.page + 1) * PAGE).map((i) => el("tr", {
      class: "episode-row" + (i === epState.selected ? " selected" : ""), tabindex: "0", "data-index": String(i),
      onclick: () => openEpisode(i),
      onkeydown: (e) => { if (e.key === "Enter") openEpisode(i); },
      title: IX.failure[i] || "",
    },
      el("td", {}, String(i)),
      el("td", {}, el("code", {}, IX.task[i]), el("div", { class: "run-name" }, DATA.runs[IX.run[i]])),
      el("td", {}, IX.seed[i] === null ? "–" : String(IX.seed[i])),
      el("td", { class: IX.success[i] ? "ok" : "bad" }, IX.success[i] ? "✓" : "✗",
        IX.outcome[i] === "terminated" ? "" : el("span", { class: "warn" }, " " + IX.outcome[i])),
      el("td", {}, fmt(IX.reward[i], 3)), el("td", {}, String(IX.turns[i])),
      el("td", { title: IX.tokens[i].toLocaleString() }, compact.format(IX.tokens[i])),
      el("td", { class: IX.errors[i] ? "bad" : "" }, String(IX.errors[i])),
    ));
    document.getElementById("episode-table").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
    pager(document.getElementById("episode-pager"), epState.page, pages, rows.length, "episodes", (p) => {
      epState.page = p;
      renderEpisodes();
    });
    for (const [id, key, label] of [["ep-failure", "failure", "failure"], ["ep-task", "task", "task"]]) {
      const chip = document.getElementById(id);
      chip.hidden = epState[key] === null;
      chip.textContent = epState[key] === null ? "" : `${label}: ${epState[key]} ✕`;
    }
  }
  function search(text) {
    epState.search = text;
    epState.page = 0;
    renderEpisodes();
    const status = document.getElementById("ep-searching");
    if (!text || indexedChunks === CHUNKS) return;
    const progress = () => {
      status.textContent = indexedChunks < CHUNKS ? `searching trajectories… ${indexedChunks}/${CHUNKS} chunks` : "";
      if (epState.search) renderEpisodes();
    };
    progress();
    indexTrajectories(progress);
  }
  function clearFilters(changes) {
    Object.assign(epState, { run: "", result: "", outcome: "", search: "", failure: null, task: null, page: 0 }, changes);
    document.getElementById("ep-run").value = epState.run;
    for (const id of ["ep-result", "ep-outcome", "ep-search"]) document.getElementById(id).value = "";
  }
  function resetFilters(changes) {
    clearFilters(changes);
    renderEpisodes();
    document.getElementById("episodes").scrollIntoView();
  }
  function showTaskEpisodes(task, run) {
    resetFilters({ task, run: String(run) });
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
  function images(value) {
    return Array.isArray(value) ? value.filter((p) => p.type !== "text") : [];
  }
  function short(text, n) {
    const line = (text || "").replace(/\s+/g, " ").trim();
    return line.length > n ? line.slice(0, n) + "…" : line;
  }
  function parseJson(text) {
    try { return { value: JSON.parse(text) }; } catch (e) { return null; }
  }
  // A tool call's arguments: code as code (highlighted), structured values as trees, the rest as JSON.
  function callArguments(call) {
    const parsed = parseJson(call.arguments);
    if (!parsed || parsed.value === null || typeof parsed.value !== "object" || Array.isArray(parsed.value)) {
      return [el("pre", { class: "code" }, call.arguments)];
    }
    return Object.entries(parsed.value).map(([key, value]) => {
      if (typeof value === "string") {
        const lang = AgentgymCode.language(call.name, key, value);
        if (lang) return el("div", { class: "arg" }, el("div", { class: "arg-name" }, key), AgentgymCode.block(lang, value));
      }
      const shown = value !== null && typeof value === "object" ? AgentgymCode.tree(value, 1) : el("code", {}, JSON.stringify(value));
      return el("div", { class: "arg arg-inline" }, el("span", { class: "arg-name" }, key + ": "), shown);
    });
  }
  function argumentsSummary(call) {
    const parsed = parseJson(call.arguments);
    if (!parsed || parsed.value === null || typeof parsed.value !== "object") return short(call.arguments, 80);
    return short(Object.entries(parsed.value).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(", "), 80);
  }
  function toolOutput(text) {
    const trimmed = text.trim();
    if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
      const parsed = parseJson(trimmed);
      if (parsed && parsed.value !== null && typeof parsed.value === "object") return AgentgymCode.tree(parsed.value, 1);
    }
    return el("pre", {}, text);
  }
  function message(m) {
    const box = el("div", { class: `msg role-${m.role}` }, el("div", { class: "role" }, m.role + (m.name ? ` · ${m.name}` : "")));
    if (m.role === "tool") {
      const text = textOf(m.content);
      box.append(el("details", { class: "tool-output" },
        el("summary", {}, `output of ${m.name || "tool"} (${text.length.toLocaleString()} chars): ${short(text, 90)}`),
        toolOutput(text)));
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
        el("summary", {}, "call ", el("code", {}, call.name), ` (${argumentsSummary(call)})`),
        ...callArguments(call), el("div", { class: "note" }, `id ${call.id}`)));
    }
    return box;
  }
  function jsonFold(label, value) {
    if (!value || (typeof value === "object" && Object.keys(value).length === 0)) return null;
    return el("details", { class: "fold" }, el("summary", {}, label), AgentgymCode.tree(value, 2));
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
      // Below the list on a narrow page: bring the episode up, or the click seems to do nothing.
      const top = viewer.getBoundingClientRect().top;
      if (top > window.innerHeight * 0.6 || top < 0) viewer.scrollIntoView({ block: "start" });
    } catch (e) {
      viewer.replaceChildren(el("p", { class: "bad" }, `could not open episode ${i}: ${e}`));
    }
  }

  // ------------------------------------------------------------------ side by side
  // Two runs' episodes of one task in two columns; the second side follows the first's seed when it can.
  const side = { task: null, runs: [null, null], episodes: [null, null] };
  function runsWith(task) {
    return DATA.runs.map((_, r) => r).filter((r) => episodesOf(r, task).length);
  }
  async function renderPane(k) {
    const pane = document.getElementById(k ? "side-b" : "side-a");
    const runs = runsWith(side.task);
    const episodes = episodesOf(side.runs[k], side.task);
    const runSelect = el("select", { class: "side-run", onchange: (e) => {
      side.runs[k] = Number(e.target.value);
      const mine = episodesOf(side.runs[k], side.task);
      const seed = IX.seed[side.episodes[1 - k]];
      side.episodes[k] = mine.find((i) => IX.seed[i] === seed) ?? mine[0];  // the other side's seed if it can
      renderPane(k);
    } }, ...runs.map((r) => el("option", { value: String(r), selected: r === side.runs[k] }, DATA.runs[r])));
    const episodeSelect = el("select", { class: "side-episode", onchange: (e) => {
      side.episodes[k] = Number(e.target.value);
      renderPane(k);
    } }, ...episodes.map((i) => el("option", { value: String(i), selected: i === side.episodes[k] },
      `episode ${i} · seed ${IX.seed[i] ?? "–"} · ${IX.success[i] ? "✓" : "✗"} ${fmt(IX.reward[i], 3)}`)));
    pane.replaceChildren(el("div", { class: "controls" }, runSelect, episodeSelect), el("p", { class: "hint" }, "loading…"));
    const i = side.episodes[k];
    const t = await trajectory(i);
    if (side.episodes[k] === i) pane.replaceChildren(pane.firstChild, renderTrajectory(i, t));
  }
  function openSide(task) {
    const runs = runsWith(task);
    const first = episodesOf(runs[0], task)[0];
    const second = episodesOf(runs[1], task);
    Object.assign(side, { task, runs: [runs[0], runs[1]],
      episodes: [first, second.find((i) => IX.seed[i] === IX.seed[first]) ?? second[0]] });
    const section = document.getElementById("side-by-side");
    section.hidden = false;
    document.getElementById("side-task").textContent = task;
    renderPane(0);
    renderPane(1);
    section.scrollIntoView();
  }

  // ------------------------------------------------------------------ live (agentgym view --serve)
  // The server rebuilds the report as runs grow; the page polls its version and reloads, keeping its place.
  function saveState() {
    sessionStorage.setItem(STATE_KEY, JSON.stringify({ ep: epState, task: taskState, scroll: window.scrollY }));
  }
  function restoreState() {
    const saved = sessionStorage.getItem(STATE_KEY);
    if (!saved) return false;
    sessionStorage.removeItem(STATE_KEY);
    const state = JSON.parse(saved);
    Object.assign(epState, state.ep);
    Object.assign(taskState, state.task);
    document.getElementById("ep-run").value = epState.run;
    document.getElementById("ep-result").value = epState.result;
    document.getElementById("ep-outcome").value = epState.outcome;
    document.getElementById("ep-search").value = epState.search;
    document.getElementById("task-filter").value = taskState.filter;
    document.getElementById("task-differ").checked = taskState.differ;
    requestAnimationFrame(() => window.scrollTo(0, state.scroll));
    return true;
  }
  function watchLive() {
    const status = document.getElementById("live-status");
    status.hidden = false;
    status.textContent = `live · ${N.toLocaleString()} episodes · ${new Date().toLocaleTimeString()}`;
    const poll = async () => {
      try {
        const r = await fetch("__live__", { cache: "no-store" });
        const live = await r.json();
        if (live.version !== LIVE) {
          saveState();
          location.reload();
          return;
        }
        status.textContent = `live · ${N.toLocaleString()} episodes` + (live.error ? ` · ${live.error}` : "");
      } catch (e) {
        status.textContent = "live · server gone";
      }
      setTimeout(poll, 1000);
    };
    setTimeout(poll, 1000);
  }

  // ------------------------------------------------------------------ wiring
  function linkedEpisode() {
    const m = /^#episode-(\d+)$/.exec(location.hash);
    return m && Number(m[1]) < N ? Number(m[1]) : -1;
  }
  // The list's page that holds episode i, its filters cleared if they hide it.
  function showInList(i) {
    if (!episodeRows().includes(i)) clearFilters({});
    epState.page = Math.floor(episodeRows().indexOf(i) / PAGE);
    renderEpisodes();
  }
  function setup() {
    drawPlots();
    const runSel = document.getElementById("ep-run");
    runSel.append(el("option", { value: "" }, "all runs"), ...DATA.runs.map((r, i) => el("option", { value: String(i) }, r)));
    const outcomes = [...new Set(IX.outcome)].sort();
    document.getElementById("ep-outcome").append(...outcomes.map((o) => el("option", { value: o }, o)));
    const bind = (id, key) => document.getElementById(id).addEventListener("change", (e) => {
      epState[key] = e.target.value;
      epState.page = 0;
      renderEpisodes();
    });
    bind("ep-run", "run");
    bind("ep-result", "result");
    bind("ep-outcome", "outcome");
    document.getElementById("ep-search").addEventListener("input", (e) => search(e.target.value));
    for (const [id, key] of [["ep-failure", "failure"], ["ep-task", "task"]]) {
      document.getElementById(id).addEventListener("click", () => {
        epState[key] = null;
        renderEpisodes();
      });
    }
    document.querySelectorAll("a.failure-link").forEach((a) => a.addEventListener("click", (e) => {
      e.preventDefault();
      resetFilters({ failure: a.dataset.failure, run: a.dataset.run });  // every episode that failed so
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
    const restored = LIVE && restoreState();
    renderTasks();
    renderEpisodes();
    if (restored && epState.search) search(epState.search);
    const linked = linkedEpisode();
    const open = linked >= 0 ? linked : restored && epState.selected >= 0 ? epState.selected : -1;
    if (open >= 0) {
      if (!restored) showInList(open);
      openEpisode(open);
    }
    window.addEventListener("hashchange", () => {  // a link to #episode-N within the page
      const i = linkedEpisode();
      if (i < 0) return;
      showInList(i);
      openEpisode(i);
    });
    if (LIVE) watchLive();
  }
  setup();
})();
