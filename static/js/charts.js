/* Plotly charts drawn from the site's small JSON endpoints.
 *
 * Markup: <div class="chart" data-chart-url="/...json" data-chart-key="name"> draws figure
 * `name` of that JSON document ({data, layout, config}). Plotly's bundle is served from our
 * own static files (data-plotly on this script tag) and loaded only when a chart scrolls
 * into view, so pages stay light. Buttons inside [data-axis-switch] swap the URL of the
 * charts next to them (e.g. interaction level -> domain). The server builds light figures;
 * when the system asks for a dark theme (prefers-color-scheme) they are re-coloured here to
 * the site's dark palette, and redrawn when the setting changes.
 */
(function () {
  "use strict";
  if (window.IWRCharts) return;  // the script may be included by more than one snippet
  var script = document.currentScript;
  var plotlySrc = script ? script.getAttribute("data-plotly") : null;
  var plotlyPromise = null;
  var documents = {};

  function loadPlotly() {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotlyPromise) {
      plotlyPromise = new Promise(function (resolve, reject) {
        var tag = document.createElement("script");
        tag.src = plotlySrc;
        tag.onload = function () { resolve(window.Plotly); };
        tag.onerror = function () { reject(new Error("Plotly could not be loaded")); };
        document.head.appendChild(tag);
      });
    }
    return plotlyPromise;
  }

  function fetchDocument(url) {
    if (!documents[url]) {
      documents[url] = fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        });
    }
    return documents[url];
  }

  function say(element, text) {
    element.textContent = "";
    var note = document.createElement("div");
    note.className = "chart-status";
    note.textContent = text;
    element.appendChild(note);
  }

  // A figure is empty when no trace has a single value: a trace of nulls only (a category mean
  // with no ranked model yet) would draw bare axes, which reads as a broken chart.
  function isEmpty(figure) {
    if (!figure || !figure.data || !figure.data.length) return true;
    return figure.data.every(function (trace) {
      var values = trace.type === "heatmap" ? [].concat.apply([], trace.z || []) : (trace.orientation === "h" ? trace.x : trace.y);
      return !values || !values.some(function (value) { return value !== null && value !== undefined; });
    });
  }

  function shorten(label) {
    return label.length > 18 ? label.slice(0, 17) + "\u2026" : label;
  }

  // On a phone, long model names on a vertical axis would leave no room for the bars:
  // shorten the tick labels (the hover text keeps the full names) and the left margin.
  function narrow(figure) {
    var layout = JSON.parse(JSON.stringify(figure.layout));
    var trace = figure.data[0] || {};
    var names = trace.type === "heatmap" || trace.orientation === "h" ? trace.y : null;
    if (names && names.length) {
      layout.yaxis = Object.assign({}, layout.yaxis, { tickvals: names, ticktext: names.map(shorten), tickfont: { size: 11 } });
      layout.margin = Object.assign({}, layout.margin, { l: 120 });
    }
    return layout;
  }

  var darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  var DARK = { fg: "#e5e7eb", soft: "#cbd5e1", grid: "#273449", bg: "#131d33",
               scale: [[0, "#17223a"], [0.5, "#3b6fd8"], [1, "#bcd3ff"]] };

  function isDark() { return !!(darkQuery && darkQuery.matches); }

  // The dark version of a light figure: text, grid and backgrounds from the dark palette, error
  // bars in the text colour, and a heat map scale that runs from the background to light blue.
  function darken(data, layout) {
    layout = JSON.parse(JSON.stringify(layout));
    layout.paper_bgcolor = layout.plot_bgcolor = DARK.bg;
    layout.font = Object.assign({}, layout.font, { color: DARK.fg });
    Object.keys(layout).forEach(function (name) {
      if (/^[xy]axis\d*$/.test(name)) {
        layout[name] = Object.assign({}, layout[name], { gridcolor: DARK.grid, linecolor: DARK.grid, zerolinecolor: DARK.grid });
      }
    });
    data = data.map(function (trace) {
      var copy = Object.assign({}, trace);
      if (copy.error_x) copy.error_x = Object.assign({}, copy.error_x, { color: DARK.soft });
      if (copy.error_y) copy.error_y = Object.assign({}, copy.error_y, { color: DARK.soft });
      if (copy.type === "heatmap") {
        copy.colorscale = DARK.scale;
        copy.colorbar = Object.assign({}, copy.colorbar, { tickfont: { color: DARK.fg } });
      }
      return copy;
    });
    return { data: data, layout: layout };
  }

  function draw(element) {
    var url = element.getAttribute("data-chart-url");
    var key = element.getAttribute("data-chart-key");
    if (!element.querySelector(".main-svg")) say(element, "Loading chart\u2026");
    Promise.all([loadPlotly(), fetchDocument(url)]).then(function (results) {
      var Plotly = results[0], figure = results[1][key];
      if (isEmpty(figure)) { if (window.Plotly) Plotly.purge(element); say(element, "No data for this chart yet."); return; }
      var status = element.querySelector(".chart-status");
      if (status) status.remove();
      var config = Object.assign({ responsive: true, displaylogo: false }, figure.config || {});
      var layout = figure.layout, data = figure.data;
      if (window.matchMedia("(max-width: 720px)").matches) {
        config.displayModeBar = false;  // it covers the legend
        layout = narrow(figure);
      }
      if (isDark()) {
        var dark = darken(data, layout);
        data = dark.data; layout = dark.layout;
      }
      element.setAttribute("data-theme", isDark() ? "dark" : "light");
      Plotly.react(element, data, layout, config);
      element.setAttribute("data-drawn", "1");
    }).catch(function () { say(element, "The chart could not be loaded."); });
  }

  function whenVisible(elements, callback) {
    if (!("IntersectionObserver" in window)) { elements.forEach(callback); return; }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { observer.unobserve(entry.target); callback(entry.target); }
      });
    }, { rootMargin: "200px" });
    elements.forEach(function (element) { observer.observe(element); });
  }

  function setUpSwitches() {
    document.querySelectorAll("[data-axis-switch]").forEach(function (card) {
      var buttons = card.querySelectorAll("button[data-url]");
      buttons.forEach(function (button) {
        button.addEventListener("click", function () {
          buttons.forEach(function (other) { other.setAttribute("aria-selected", String(other === button)); });
          card.querySelectorAll(".chart[data-chart-url]").forEach(function (chart) {
            chart.setAttribute("data-chart-url", button.getAttribute("data-url"));
            draw(chart);
          });
        });
      });
    });
  }

  function start() {
    var charts = Array.prototype.slice.call(document.querySelectorAll(".chart[data-chart-url]"));
    whenVisible(charts, draw);
    setUpSwitches();
    if (darkQuery && darkQuery.addEventListener) {
      darkQuery.addEventListener("change", function () {
        charts.forEach(function (chart) { if (chart.getAttribute("data-drawn")) draw(chart); });
      });
    }
  }

  window.IWRCharts = { draw: draw, darken: darken };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
