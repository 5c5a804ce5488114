// arena web view: SVG boards drawn from position texts. No rules live here: the pages only
// draw positions the server computed and pick among move texts the server listed.
"use strict";

var Board = (function () {
  var NS = "http://www.w3.org/2000/svg";
  // Each game's facts (board size and drawing, each side's letter and stone colour, stones per
  // turn, marked points) come from the server's /api/games/meta through setGames: the pages
  // keep no per-game tables.
  var GAMES = {};
  var PAINT = { black: "#151515", white: "#f5f5f0", red: "#d62828", blue: "#1d4ed8" };

  // [first, second] stone paints of a game.
  function paints(game) {
    var f = GAMES[game];
    return f ? f.sides.map(function (s) { return PAINT[s.colour] || "#888888"; }) : ["#888888", "#888888"];
  }

  function el(tag, attrs, parent) {
    var node = document.createElementNS(NS, tag);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function pointName(col, row) {
    return String.fromCharCode(65 + col) + (row + 1);
  }

  // Position text: rows from the top down separated by '/', the side to move, key=value pairs.
  function parse(text) {
    var parts = String(text || "").trim().split(/\s+/);
    var rows = (parts[0] || "").split("/");
    var keys = {};
    parts.slice(2).forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) keys[kv.slice(0, i)] = kv.slice(i + 1);
    });
    return { rows: rows, side: parts[1] === "o" ? "second" : "first", keys: keys };
  }

  // The stone at (col, row) of a parsed position: "first", "second" or null.
  function stoneAt(parsed, col, row, n) {
    var line = parsed.rows[n - 1 - row] || "";
    var c = line.charAt(col);
    return c === "x" ? "first" : c === "o" ? "second" : null;
  }

  // The points a move text names, in order (e.g. "G7xG9+C4" -> ["G7", "G9", "C4"]).
  function movePoints(text) {
    return String(text || "").toUpperCase().match(/[A-Z][0-9]+/g) || [];
  }

  // A square board: smaller boards get wider steps; circuits need room for their loops.
  function squareGeometry(circuits, n) {
    var step = Math.max(30, Math.min(56, Math.round(470 / (n - 1))));
    var margin = circuits ? step * 2.6 : step * 1.2;
    return {
      step: step,
      margin: margin,
      size: margin * 2 + step * (n - 1),
      x: function (col) { return margin + col * step; },
      y: function (row) { return margin + (n - 1 - row) * step; },
    };
  }

  function hexGeometry(n) {
    var r = 20;
    var w = Math.sqrt(3) * r;
    var margin = 34;
    var x0 = margin + w / 2 + ((n - 1) / 2) * w;
    var y0 = margin + r;
    return {
      r: r,
      w: w,
      width: x0 + (n - 1) * w + w / 2 + margin,
      height: y0 + 1.5 * r * (n - 1) + r + margin,
      x: function (col, row) { return x0 + w * (col - row / 2); },
      y: function (col, row) { return y0 + 1.5 * r * (n - 1 - row); },
      corner: function (cx, cy, k, scale) {
        var a = ((60 * k - 90) * Math.PI) / 180;
        return [cx + r * (scale || 1) * Math.cos(a), cy + r * (scale || 1) * Math.sin(a)];
      },
    };
  }

  function label(svg, x, y, text, size) {
    var t = el("text", { x: x, y: y, "font-size": size || 12, "text-anchor": "middle",
      "dominant-baseline": "central", class: "coord" }, svg);
    t.textContent = text;
  }

  // Points named like "D4": [column, row] from 0.
  function pointPlace(name) {
    var m = /^([A-Z])([0-9]+)$/.exec(String(name));
    return m ? [m[1].charCodeAt(0) - 65, Number(m[2]) - 1] : null;
  }

  function drawSquare(svg, game, n, parsed, options) {
    var facts = GAMES[game];
    var circuits = facts.board === "circuits";
    var g = squareGeometry(circuits, n);
    svg.setAttribute("viewBox", "0 0 " + g.size + " " + g.size);
    el("rect", { x: 0, y: 0, width: g.size, height: g.size, class: "wood " + game }, svg);
    var lines = el("g", { class: "lines" }, svg);
    for (var i = 0; i < n; i++) {
      el("line", { x1: g.x(0), y1: g.y(i), x2: g.x(n - 1), y2: g.y(i) }, lines);
      el("line", { x1: g.x(i), y1: g.y(0), x2: g.x(i), y2: g.y(n - 1) }, lines);
    }
    (facts.star_points || []).forEach(function (name) {
      var at = pointPlace(name);
      if (at) el("circle", { cx: g.x(at[0]), cy: g.y(at[1]), r: 3, class: "star" }, svg);
    });
    if (circuits) drawCircuits(svg, g, n);
    var off = circuits ? g.step * 2.25 : g.step * 0.75;
    for (var k = 0; k < n; k++) {
      label(svg, g.x(k), g.y(0) + off, String.fromCharCode(65 + k));
      label(svg, g.x(k), g.y(n - 1) - off, String.fromCharCode(65 + k));
      label(svg, g.x(0) - off, g.y(k), String(k + 1));
      label(svg, g.x(n - 1) + off, g.y(k), String(k + 1));
    }
    var radius = g.step * (circuits ? 0.36 : 0.45);
    var points = el("g", { class: "points" }, svg);
    var stones = el("g", { class: "stones" }, svg);
    for (var row = 0; row < n; row++) {
      for (var col = 0; col < n; col++) {
        var name = pointName(col, row);
        el("circle", { cx: g.x(col), cy: g.y(row), r: g.step * 0.48, class: "pt",
          "data-point": name }, points);
        var side = stoneAt(parsed, col, row, n);
        if (side) stone(stones, game, name, side, g.x(col), g.y(row), radius);
        mark(svg, options, name, g.x(col), g.y(row), radius);
      }
    }
  }

  // Surakarta's two circuits: their lines and the eight corner loops (three quarters of a
  // circle around each corner, radius one step for the inner circuit, two for the outer).
  function drawCircuits(svg, g, n) {
    var last = n - 1;
    [[1, "inner"], [2, "outer"]].forEach(function (pair) {
      var k = pair[0];
      var group = el("g", { class: "circuit " + pair[1] }, svg);
      [k, last - k].forEach(function (i) {
        el("line", { x1: g.x(0), y1: g.y(i), x2: g.x(last), y2: g.y(i) }, group);
        el("line", { x1: g.x(i), y1: g.y(0), x2: g.x(i), y2: g.y(last) }, group);
      });
      [[0, 0, 1, 1], [last, 0, -1, 1], [0, last, 1, -1], [last, last, -1, -1]].forEach(function (c) {
        var cx = g.x(c[0]), cy = g.y(c[1]);
        var rad = k * g.step;
        // Directions from the corner into the board, in screen coordinates.
        var a1 = Math.atan2(0, c[2]);
        var a2 = Math.atan2(-c[3], 0);
        var d = a2 - a1;
        while (d > Math.PI) d -= 2 * Math.PI;
        while (d <= -Math.PI) d += 2 * Math.PI;
        var sweep = d > 0 ? -1.5 * Math.PI : 1.5 * Math.PI;
        var pts = [];
        for (var s = 0; s <= 48; s++) {
          var a = a1 + (sweep * s) / 48;
          pts.push((cx + rad * Math.cos(a)).toFixed(1) + "," + (cy + rad * Math.sin(a)).toFixed(1));
        }
        el("polyline", { points: pts.join(" "), fill: "none" }, group);
      });
    });
  }

  function drawHex(svg, game, n, parsed, options) {
    var g = hexGeometry(n);
    svg.setAttribute("viewBox", "0 0 " + g.width.toFixed(1) + " " + g.height.toFixed(1));
    el("rect", { x: 0, y: 0, width: g.width, height: g.height, class: "wood " + game }, svg);
    var cells = el("g", { class: "cells" }, svg);
    var edges = el("g", { class: "edges" }, svg);
    var stones = el("g", { class: "stones" }, svg);
    var colours = paints(game);
    for (var row = 0; row < n; row++) {
      for (var col = 0; col < n; col++) {
        var cx = g.x(col, row), cy = g.y(col, row);
        var corners = [];
        for (var k = 0; k < 6; k++) corners.push(g.corner(cx, cy, k));
        var name = pointName(col, row);
        el("polygon", { points: corners.map(function (p) { return p[0].toFixed(1) + "," + p[1].toFixed(1); }).join(" "),
          class: "pt cell", "data-point": name }, cells);
        // The sides' edges: first (red) joins row 1 to the top row, second (blue) column A
        // to the last column.
        var edge = function (a, b, colour) {
          el("line", { x1: corners[a][0], y1: corners[a][1], x2: corners[b][0], y2: corners[b][1],
            stroke: colour, "stroke-width": 5, "stroke-linecap": "round" }, edges);
        };
        if (row === 0) { edge(2, 3, colours[0]); edge(3, 4, colours[0]); }
        if (row === n - 1) { edge(5, 0, colours[0]); edge(0, 1, colours[0]); }
        if (col === 0) { edge(4, 5, colours[1]); edge(3, 4, colours[1]); }
        if (col === n - 1) { edge(1, 2, colours[1]); edge(0, 1, colours[1]); }
        var side = stoneAt(parsed, col, row, n);
        if (side) stone(stones, game, name, side, cx, cy, g.r * 0.68);
        mark(svg, options, name, cx, cy, g.r * 0.68);
      }
    }
    for (var i = 0; i < n; i++) {
      label(svg, g.x(i, 0), g.y(i, 0) + g.r * 1.7, String.fromCharCode(65 + i));
      label(svg, g.x(i, n - 1), g.y(i, n - 1) - g.r * 1.7, String.fromCharCode(65 + i));
      label(svg, g.x(0, i) - g.w * 1.1, g.y(0, i), String(i + 1));
      label(svg, g.x(n - 1, i) + g.w * 1.1, g.y(n - 1, i), String(i + 1));
    }
  }

  function stone(parent, game, name, side, x, y, r) {
    var colours = paints(game);
    el("circle", { cx: x, cy: y, r: r, class: "stone " + side, "data-point": name, "data-side": side,
      fill: colours[side === "first" ? 0 : 1] }, parent);
  }

  function mark(svg, options, name, x, y, r) {
    if (options.last && options.last.indexOf(name) >= 0) {
      el("circle", { cx: x, cy: y, r: r * 0.35, class: "last" }, svg);
    }
    if (options.selected && options.selected.indexOf(name) >= 0) {
      el("circle", { cx: x, cy: y, r: r * 1.05, class: "selected" }, svg);
    }
    if (options.targets && options.targets.indexOf(name) >= 0) {
      el("circle", { cx: x, cy: y, r: r * 0.3, class: "target" }, svg);
    }
  }

  // Draws `position` of `game` into `container` (replacing what was there) and returns the
  // <svg>. options: last (points of the last move), selected, targets (points to highlight),
  // onPoint(name) (click handler).
  function draw(container, game, position, options) {
    options = options || {};
    var facts = GAMES[game];
    var svg = el("svg", { class: "board", "data-game": game, xmlns: NS });
    if (!facts) return svg;
    var n = facts.board_size;
    var parsed = parse(position);
    if (facts.board === "hexagons") drawHex(svg, game, n, parsed, options);
    else drawSquare(svg, game, n, parsed, options);
    if (options.onPoint) {
      svg.addEventListener("click", function (ev) {
        var target = ev.target.closest ? ev.target.closest("[data-point]") : null;
        var name = target && target.getAttribute("data-point");
        if (!name) {
          // A click that landed on a mark: the nearest point under it.
          var under = document.elementsFromPoint ? document.elementsFromPoint(ev.clientX, ev.clientY) : [];
          for (var i = 0; i < under.length && !name; i++) name = under[i].getAttribute && under[i].getAttribute("data-point");
        }
        if (name) options.onPoint(name);
      });
    }
    if (container) {
      container.innerHTML = "";
      container.appendChild(svg);
    }
    return svg;
  }

  return {
    draw: draw,
    parse: parse,
    movePoints: movePoints,
    colourLetter: function (game, side) {
      var f = GAMES[game];
      return f ? f.sides[side === "first" ? 0 : 1].letter : "";
    },
    // Takes the server's /api/games/meta.
    setGames: function (meta) {
      ((meta && meta.games) || []).forEach(function (f) { GAMES[f.id] = f; });
    },
    // A game's facts from /api/games/meta, or null.
    facts: function (game) { return GAMES[game] || null; },
    // The ids of every game the server knows.
    gameIds: function () { return Object.keys(GAMES); },
  };
})();
