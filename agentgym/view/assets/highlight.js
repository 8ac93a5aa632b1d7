// agentgym report: a small syntax highlighter for the code in tool calls (python, diffs), and JSON trees.
// It returns DOM nodes built from text nodes only: highlighted code is never parsed as HTML.
"use strict";
const AgentgymCode = (function () {
  const KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case").split(" "));
  const BUILTINS = new Set(("print len range str int float list dict set tuple bool open sum min max abs sorted " +
    "enumerate zip map filter isinstance type super self cls any all repr round input iter next object Exception " +
    "ValueError TypeError KeyError IndexError").split(" "));
  // One alternative per token kind: comment, string (triple or single, with prefixes), number, decorator, name.
  const PY = /(#[^\n]*)|((?:[rbfuRBFU]{1,2})?(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?\b)|(@[A-Za-z_][\w.]*)|([A-Za-z_]\w*)/g;

  function span(cls, text) {
    const s = document.createElement("span");
    s.className = cls;
    s.textContent = text;
    return s;
  }

  function python(code) {
    const out = [];
    let last = 0;
    let previous = "";
    for (const m of code.matchAll(PY)) {
      if (m.index > last) out.push(document.createTextNode(code.slice(last, m.index)));
      const [text, comment, string, number, decorator, name] = m;
      if (comment) out.push(span("tok-comment", text));
      else if (string) out.push(span("tok-string", text));
      else if (number) out.push(span("tok-number", text));
      else if (decorator) out.push(span("tok-decorator", text));
      else if (name && (previous === "def" || previous === "class")) out.push(span("tok-def", text));
      else if (name && KEYWORDS.has(text)) out.push(span("tok-keyword", text));
      else if (name && BUILTINS.has(text)) out.push(span("tok-builtin", text));
      else out.push(document.createTextNode(text));
      if (name) previous = text;
      last = m.index + text.length;
    }
    if (last < code.length) out.push(document.createTextNode(code.slice(last)));
    return out;
  }

  function diff(code) {
    return code.split(/(?<=\n)/).map((line) => {
      if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) return span("tok-file", line);
      if (line.startsWith("+")) return span("tok-add", line);
      if (line.startsWith("-")) return span("tok-del", line);
      if (line.startsWith("@@")) return span("tok-hunk", line);
      return document.createTextNode(line);
    });
  }

  const CODE_KEYS = new Set(["code", "source", "script", "program", "patch", "diff", "command", "cmd", "content",
    "new_str", "old_str", "file_text", "sql"]);

  // The language of one string argument of a tool call, or null when it is plain text.
  function language(tool, key, value) {
    if (/^(diff --git|--- |\+\+\+ )/m.test(value) && /^@@ /m.test(value)) return "diff";
    if (key === "patch" || key === "diff") return "diff";
    if (/python/i.test(tool) || key === "code" || key === "source" || key === "script") return "python";
    if (CODE_KEYS.has(key) || value.includes("\n")) return "text";
    return null;
  }

  function block(lang, value) {
    const pre = document.createElement("pre");
    pre.className = "code lang-" + lang;
    pre.append(...(lang === "python" ? python(value) : lang === "diff" ? diff(value) : [document.createTextNode(value)]));
    return pre;
  }

  // A JSON value as a tree: objects and arrays fold (open to `openDepth`), leaves are typed text.
  function tree(value, openDepth, depth) {
    depth = depth || 0;
    if (value === null || typeof value !== "object") {
      if (typeof value === "string" && value.includes("\n")) return block("text", value);
      return span("json-" + (value === null ? "null" : typeof value), JSON.stringify(value));
    }
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const details = document.createElement("details");
    details.className = "json-tree";
    if (depth < openDepth) details.open = true;
    const count = Array.isArray(value) ? `[ ${entries.length} item${entries.length === 1 ? "" : "s"} ]`
      : `{ ${entries.length} key${entries.length === 1 ? "" : "s"} }`;
    details.append(Object.assign(document.createElement("summary"), { textContent: count }));
    const list = document.createElement("div");
    list.className = "json-children";
    for (const [k, v] of entries) {
      const row = document.createElement("div");
      row.className = "json-row";
      row.append(span("json-key", k + ": "), tree(v, openDepth, depth + 1));
      list.append(row);
    }
    details.append(list);
    return details;
  }

  return { python, diff, language, block, tree };
})();
