// chokaq dashboard: live counts, charts and console over Server-Sent
// Events, live dead-letter rows, and a few form helpers. Plain JavaScript,
// no build. Everything from the server goes into the page as text
// (textContent) or as an attribute value (setAttribute), never as markup.
(function () {
  "use strict";
  var body = document.body;
  var base = body.dataset.base || "";
  var page = body.dataset.page || "";
  var readOnly = body.dataset.readonly === "1";

  // Console panel.
  var consoleList = document.getElementById("console");
  function pad(n) { return n < 10 ? "0" + n : String(n); }
  function clock(when) {
    var d = new Date(when);
    return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
  }
  function appendConsole(ev) {
    if (!consoleList) { return; }
    var li = document.createElement("li");
    li.className = "k-" + ev.kind;
    var t = document.createElement("time");
    t.textContent = clock(ev.time);
    li.appendChild(t);
    li.appendChild(document.createTextNode(" " + ev.text));
    consoleList.appendChild(li);
    while (consoleList.children.length > 200) { consoleList.removeChild(consoleList.firstChild); }
    consoleList.scrollTop = consoleList.scrollHeight;
  }
  if (consoleList) { consoleList.scrollTop = consoleList.scrollHeight; }

  // Counts: every element with data-k inside a queue's row takes that key;
  // a sparkline's polyline (data-points) takes its points.
  function fill(scope, data) {
    scope.querySelectorAll("[data-k]").forEach(function (el) {
      var k = el.dataset.k;
      if (!(k in data)) { return; }
      el.textContent = data[k];
      if (el.dataset.cls !== undefined) { el.className = el.dataset.cls + data[k]; }
    });
    scope.querySelectorAll("[data-points]").forEach(function (el) {
      var k = el.dataset.points;
      if (k in data) { el.setAttribute("points", data[k]); }
    });
  }
  var shownQueues = null;
  function applyCounts(c) {
    if (page === "overview") {
      var names = c.queues.map(function (q) { return q.queue; }).join("\n");
      if (shownQueues === null) {
        shownQueues = Array.prototype.map.call(document.querySelectorAll("#overview tbody tr[data-queue]"),
          function (r) { return r.dataset.queue; }).join("\n");
      }
      if (names !== shownQueues) { location.reload(); return; } // a queue came or went
    }
    c.queues.forEach(function (q) {
      var name = CSS.escape(q.queue);
      document.querySelectorAll('tr[data-queue="' + name + '"], [data-counts-of="' + name + '"]').forEach(function (row) { fill(row, q); });
    });
    document.querySelectorAll("tr[data-totals]").forEach(function (row) { fill(row, c.total); });
    document.querySelectorAll("[data-total]").forEach(function (el) {
      var k = el.dataset.total;
      if (k in c.total) { el.textContent = c.total[k]; }
    });
  }

  // The live chart: the server sends the points, labels and numbers of the
  // chart this page shows (its queue, or all queues); they are copied into
  // the SVG's attributes and the table's cells.
  var liveChart = document.getElementById("live-chart");
  function applyLive(v) {
    if (!liveChart || v.queue !== (liveChart.dataset.queue || "")) { return; }
    var svg = liveChart.querySelector("svg");
    svg.classList.toggle("is-empty", v.empty);
    liveChart.querySelectorAll("[data-panel]").forEach(function (g) {
      var p = v.panels[Number(g.dataset.panel)];
      g.classList.toggle("is-empty", p.empty);
      g.setAttribute("data-total", String(p.total));
      g.querySelector("polyline").setAttribute("points", p.points);
      g.querySelector('[data-y="max"]').textContent = p.max;
      g.querySelector('[data-y="mid"]').textContent = p.mid;
    });
    liveChart.querySelectorAll("[data-x]").forEach(function (el) { el.textContent = v.x_labels[Number(el.dataset.x)]; });
    liveChart.querySelectorAll('[data-live="summary"]').forEach(function (el) { el.textContent = v.summary; });
    var start = Date.parse(v.start);
    var rows = document.getElementById("live-rows");
    if (!rows) { return; }
    for (var i = 0; i < v.archived.length; i++) {
      var tr = rows.rows[i];
      if (!tr) {
        tr = rows.insertRow();
        for (var j = 0; j < 3; j++) { tr.insertCell().className = j ? "num" : ""; }
      }
      tr.cells[0].textContent = clock(start + i * v.bucket_seconds * 1000);
      tr.cells[1].textContent = String(v.archived[i]);
      tr.cells[2].textContent = String(v.dead[i]);
    }
  }

  // A dead letter that arrives while the first page of the list is open,
  // and matches its filter, is added at the top.
  function insertDead(job) {
    var rows = document.getElementById("rows");
    if (page !== "dead" || !rows || rows.dataset.live !== "1") { return; }
    var f = rows.dataset;
    if ((f.queue && f.queue !== job.queue) || (f.type && f.type !== job.type) ||
        (f.reason && f.reason.toLowerCase() !== job.reason.toLowerCase() && f.reason !== String(job.reason_code))) { return; }
    if (rows.querySelector('tr[data-id="' + job.id + '"]')) { return; }
    var empty = rows.querySelector("tr.empty");
    if (empty) { empty.remove(); }
    var tr = document.createElement("tr");
    tr.dataset.id = job.id;
    tr.className = "fresh";
    function td(text, cls) {
      var c = document.createElement("td");
      if (cls) { c.className = cls; }
      if (text !== null) { c.textContent = text; }
      tr.appendChild(c);
      return c;
    }
    if (!readOnly) {
      var cb = document.createElement("input");
      cb.type = "checkbox";
      cb.name = "ids";
      cb.value = job.id;
      cb.setAttribute("form", "bulk");
      td(null, "sel").appendChild(cb);
    }
    var a = document.createElement("a");
    a.href = base + "/job/" + job.id;
    a.className = "inspect";
    a.textContent = job.id;
    td(null, "num").appendChild(a);
    td(job.queue);
    td(job.type);
    var badge = document.createElement("span");
    badge.className = "badge " + job.reason_class;
    badge.textContent = job.reason;
    td(null).appendChild(badge);
    td(job.attempts, "num");
    td(job.worker);
    td(job.finished);
    td(job.error, "err");
    rows.insertBefore(tr, rows.firstChild);
    document.querySelectorAll("[data-count]").forEach(function (el) {
      el.textContent = String((parseInt(el.textContent, 10) || 0) + 1);
    });
  }

  // The inspector of an active job follows it: on each counts event the
  // page is fetched again and the job's part swapped in, until it settles.
  var refreshing = false;
  function refreshJob() {
    var view = document.getElementById("job-view");
    if (refreshing || !view || !view.dataset.refresh) { return; }
    // A reason being typed (focused, or edited) must not be swapped away:
    // the inspector follows the job again once the form is left alone.
    // Asked again when the page arrives: one can start typing while it
    // is fetched.
    function editing() {
      return Array.prototype.some.call(view.querySelectorAll("input, textarea"), function (el) {
        return el === document.activeElement || (el.type !== "hidden" && el.value !== el.defaultValue);
      });
    }
    if (editing()) { return; }
    refreshing = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html || editing() || !view.isConnected) { return; }
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("job-view");
        if (next) {
          next = document.adoptNode(next);
          view.replaceWith(next);
          wire(next);
        }
      })
      .catch(function () {})
      .then(function () { refreshing = false; });
  }

  var live = document.getElementById("live");
  function connect() {
    if (!live || !window.EventSource) { return; }
    var url = base + "/events?after=" + encodeURIComponent(body.dataset.seq || "0");
    if (liveChart) {
      url += "&live=1";
      if (liveChart.dataset.queue) { url += "&queue=" + encodeURIComponent(liveChart.dataset.queue); }
    }
    var es = new EventSource(url);
    es.addEventListener("counts", function (e) {
      live.textContent = "live";
      live.className = "live on";
      applyCounts(JSON.parse(e.data));
      refreshJob();
    });
    es.addEventListener("live", function (e) { applyLive(JSON.parse(e.data)); });
    es.addEventListener("console", function (e) {
      var ev = JSON.parse(e.data);
      appendConsole(ev);
      if (ev.kind === "dead-letter" && ev.job) { insertDead(ev.job); }
    });
    es.onerror = function () {
      live.textContent = "reconnecting";
      live.className = "live off";
      // The browser retries a dropped stream itself, but gives up on an
      // error answer, such as 503 when the server has too many streams
      // open: try again later.
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        setTimeout(connect, 10000);
      }
    };
  }

  // Form helpers: a safety question, ticking "use the edited payload" when
  // it is edited, and select-all.
  function wire(root) {
    root.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        if (!window.confirm(form.dataset.confirm)) { e.preventDefault(); }
      });
    });
    root.querySelectorAll("textarea[data-check]").forEach(function (ta) {
      ta.addEventListener("input", function () {
        var box = document.getElementById(ta.dataset.check);
        if (box) { box.checked = true; }
      });
    });
    root.querySelectorAll("select[data-autosubmit]").forEach(function (sel) {
      sel.addEventListener("change", function () { sel.form.submit(); });
    });
    root.querySelectorAll("input[data-select-all]").forEach(function (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll('input[name="ids"]').forEach(function (cb) { cb.checked = all.checked; });
      });
    });
  }

  wire(document);
  connect();
})();
