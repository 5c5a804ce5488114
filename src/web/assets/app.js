// arena web view: the league page, the game page and the human seat. Live pages read the JSON
// API and Server-Sent Events; the static site's copies read the same JSON from files.
"use strict";

var STATIC = typeof ARENA_STATIC !== "undefined" ? ARENA_STATIC : null;

function apiUrl(path) {
  return STATIC ? STATIC.root + "api/" + path + ".json" : "/api/" + path;
}

function getJSON(path) {
  return fetch(apiUrl(path)).then(function (r) {
    if (!r.ok) throw new Error(path + ": HTTP " + r.status);
    return r.json();
  });
}

function gameUrl(id) {
  return STATIC ? STATIC.root + "games/" + encodeURIComponent(id) + ".html" : "/games/" + encodeURIComponent(id);
}

function recordUrl(name) {
  return (STATIC ? STATIC.root : "/") + "records/" + encodeURIComponent(name);
}

function $(id) { return document.getElementById(id); }

function setText(node, text) { if (node) node.textContent = text; }

function cell(row, text) {
  var td = document.createElement("td");
  if (text instanceof Node) td.appendChild(text); else td.textContent = text == null ? "" : text;
  row.appendChild(td);
  return td;
}

function link(href, text) {
  var a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

function fmtClock(ms) {
  if (ms == null) return "";
  ms = Math.max(0, ms);
  var s = Math.floor(ms / 1000);
  var m = Math.floor(s / 60);
  return m + ":" + String(s % 60).padStart(2, "0") + "." + Math.floor((ms % 1000) / 100);
}

function fmtNum(x, digits) {
  return x == null ? "" : Number(x).toFixed(digits);
}

// The two clocks of a game as the server last told them (`clocks`: first_ms, second_ms, at the
// moment `at`), the side to move's counting down, and that side's row marked.
function ClockTicker() {
  this.base = null;
}
ClockTicker.prototype.set = function (clocks, mover, running) {
  this.base = { at: Date.now(), first_ms: clocks.first_ms, second_ms: clocks.second_ms, mover: mover, running: running };
  this.tick();
};
ClockTicker.prototype.stop = function () {
  if (!this.base) return;
  var b = this.base, elapsed = b.running ? Date.now() - b.at : 0;
  b[b.mover + "_ms"] -= elapsed;
  b.running = false;
  this.tick();
};
ClockTicker.prototype.tick = function () {
  var b = this.base;
  if (!b) return;
  var elapsed = b.running ? Date.now() - b.at : 0;
  ["first", "second"].forEach(function (side) {
    var node = $(side + "-clock");
    if (!node) return;
    setText(node, fmtClock(b[side + "_ms"] - (side === b.mover ? elapsed : 0)));
    var moving = b.running && side === b.mover;
    node.className = "clock" + (moving ? " running" : "");
    if (node.parentNode) node.parentNode.className = moving ? "to-move" : "";
  });
};

function resultText(g) {
  if (!g.result) return "playing";
  var who = g.result === "first" ? g.first + " wins" : g.result === "second" ? g.second + " wins" : "draw";
  return who + (g.reason ? " by " + g.reason.replace(/_/g, " ") : "");
}

// Live events: handlers by event name, plus `resync` after a reconnect. With `match`, every event
// of that one game as it happens; without, the league's events in batches (each game's latest
// move only: a page that needs every move reloads the game when a ply is missing).
function follow(handlers, match) {
  if (STATIC || !window.EventSource) return;
  var source = new EventSource(match ? "/api/events?match=" + encodeURIComponent(match) : "/api/events");
  var dropped = false;
  ["start", "move", "end", "standings", "bots"].forEach(function (kind) {
    source.addEventListener(kind, function (e) {
      if (handlers[kind]) handlers[kind](JSON.parse(e.data));
    });
  });
  function showConn(on) {
    var node = $("conn");
    if (!node) return;
    node.className = "conn " + (on ? "on" : "off");
    node.textContent = on ? "live: connected" : "reconnecting…";
    node.title = on ? "following the server's events as they happen" : "the connection to the server dropped; trying again";
  }
  source.onerror = function () { dropped = true; showConn(false); };
  source.onopen = function () {
    showConn(true);
    if (dropped && handlers.resync) handlers.resync();
    dropped = false;
  };
}

function hideLiveOnly() {
  if (!STATIC) return;
  Array.prototype.forEach.call(document.querySelectorAll(".live-only"), function (n) { n.hidden = true; });
  Array.prototype.forEach.call(document.querySelectorAll("a[data-nav=league]"), function (a) { a.href = STATIC.root + "index.html"; });
}

/* ---------- the league page ---------- */

function leaguePage() {
  var liveBoards = {};

  function renderStandings(data) {
    var box = $("standings");
    box.innerHTML = "";
    (data.tournaments || []).forEach(function (t) {
      var section = document.createElement("section");
      var h = document.createElement("h2");
      h.textContent = t.name + " (" + t.game + ")" + (t.finished ? ": finished" : "");
      section.appendChild(h);
      var table = document.createElement("table");
      table.className = "standings";
      var head = table.insertRow();
      ["#", "bot", "games", "W", "D", "L", "points", "head-to-head", "Sonneborn-Berger", "Buchholz", "Elo ± 95%"].forEach(function (c) {
        var th = document.createElement("th"); th.textContent = c; head.appendChild(th);
      });
      (t.rows || []).forEach(function (r) {
        var row = table.insertRow();
        cell(row, r.rank); cell(row, r.name); cell(row, r.games); cell(row, r.wins); cell(row, r.draws);
        cell(row, r.losses); cell(row, fmtNum(r.points, 1)); cell(row, fmtNum(r.head_to_head, 1));
        cell(row, fmtNum(r.sonneborn_berger, 2)); cell(row, r.buchholz == null ? "–" : fmtNum(r.buchholz, 1));
        var half = (r.elo_high - r.elo_low) / 2;
        cell(row, fmtNum(r.elo, 0) + " ± " + fmtNum(half, 0));
      });
      var scroller = document.createElement("div");
      scroller.className = "table-scroll";
      scroller.appendChild(table);
      section.appendChild(scroller);
      box.appendChild(section);
    });
  }

  function loadStandings() { getJSON("standings").then(renderStandings).catch(function () {}); }

  function renderResults(games) {
    var body = $("results").tBodies[0];
    body.innerHTML = "";
    // The live page shows the latest 30; the static copy links every finished game (it is the
    // only way to reach their pages there).
    var finished = games.filter(function (g) { return g.status === "finished"; });
    (STATIC ? finished : finished.slice(-30)).reverse().forEach(function (g) {
      var row = body.insertRow();
      cell(row, link(gameUrl(g.match), g.match)); cell(row, g.tournament); cell(row, g.first);
      cell(row, g.second); cell(row, resultText(g)); cell(row, g.ply);
    });
  }

  function addLiveBoard(g) {
    if (liveBoards[g.match]) return;
    var box = $("live");
    if (!Object.keys(liveBoards).length) box.innerHTML = "";
    var a = link(gameUrl(g.match), "");
    a.className = "live-board";
    var holder = document.createElement("div");
    var caption = document.createElement("div");
    caption.className = "caption";
    caption.textContent = g.match + ": " + g.first + " vs " + g.second;
    a.appendChild(holder); a.appendChild(caption);
    box.appendChild(a);
    liveBoards[g.match] = { node: a, holder: holder, game: g.game };
    getJSON("games/" + encodeURIComponent(g.match)).then(function (d) {
      var b = liveBoards[g.match];
      if (b && !b.drawn) Board.draw(b.holder, d.game, d.positions[d.positions.length - 1], {});
    }).catch(function () {});
  }

  function removeLiveBoard(id) {
    var b = liveBoards[id];
    if (!b) return;
    b.node.remove();
    delete liveBoards[id];
    if (!Object.keys(liveBoards).length) $("live").innerHTML = '<span class="muted">none</span>';
  }

  function loadGames() {
    getJSON("games").then(function (data) {
      var games = data.games || [];
      renderResults(games);
      var playing = {};
      games.forEach(function (g) { if (g.status === "playing") { playing[g.match] = true; addLiveBoard(g); } });
      Object.keys(liveBoards).forEach(function (id) { if (!playing[id]) removeLiveBoard(id); });
    }).catch(function () {});
  }

  function loadBots() {
    if (STATIC) return;
    getJSON("bots").then(function (data) {
      var body = $("bots").tBodies[0];
      body.innerHTML = "";
      (data.bots || []).forEach(function (b) {
        var row = body.insertRow();
        cell(row, b.name + (b.builtin ? " (built-in " + b.builtin + ")" : ""));
        var dot = document.createElement("span");
        dot.className = "dot " + (b.connected ? "on" : "off");
        var c = cell(row, dot);
        c.appendChild(document.createTextNode(b.connected ? "connected" + (b.games.length ? " (" + b.games.join(", ") + ")" : "") : "not connected"));
        var playing = cell(row, "");
        b.playing.forEach(function (id, i) {
          if (i) playing.appendChild(document.createTextNode(", "));
          playing.appendChild(link(gameUrl(id), id));
        });
        cell(row, b.waiting.join("; "));
      });
      var behind = $("output-status");
      behind.hidden = !(data.output && data.output.length);
      behind.textContent = (data.output || []).map(function (f) {
        return "Output behind: cannot write the " + f.what + " (" + f.why + "); " + f.waiting + " waiting, retried until it works.";
      }).join(" ");
    }).catch(function () {});
  }

  hideLiveOnly();
  if (STATIC) { $("live-section").hidden = true; setText($("results-title"), "Results"); }
  loadStandings(); loadGames(); loadBots();
  var botsTimer = null;
  function botsSoon() { if (!botsTimer) botsTimer = setTimeout(function () { botsTimer = null; loadBots(); }, 300); }
  follow({
    start: function (g) { addLiveBoard(g); botsSoon(); },
    move: function (m) {
      var b = liveBoards[m.match];
      if (b) { b.drawn = true; Board.draw(b.holder, b.game, m.position, {}); }
    },
    end: function (e) { removeLiveBoard(e.match); loadGames(); botsSoon(); },
    standings: function () { loadStandings(); },
    bots: function () { botsSoon(); },
    resync: function () { loadStandings(); loadGames(); loadBots(); },
  });
  if (!STATIC) setInterval(loadBots, 5000);
}

/* ---------- the game page ---------- */

function gamePage() {
  var parts = location.pathname.split("/");
  var id = decodeURIComponent(parts[parts.length - 1]).replace(/\.html$/, "");
  var detail = null;
  var shown = 0;
  var clocks = new ClockTicker();

  function show(index) {
    if (!detail) return;
    shown = Math.max(0, Math.min(index, detail.positions.length - 1));
    var last = shown > 0 ? Board.movePoints(detail.moves[shown - 1]) : [];
    Board.draw($("board"), detail.game, detail.positions[shown], { last: last });
    setText($("ply"), "move " + shown + " of " + detail.moves.length);
    Array.prototype.forEach.call($("moves").children, function (li, i) {
      li.className = i === shown - 1 ? "current" : "";
      if (i === shown - 1) scrollIntoList(li);
    });
  }

  // Keeps the current move in view inside the list (not the page).
  function scrollIntoList(li) {
    var list = $("moves");
    if (li.offsetTop < list.scrollTop) list.scrollTop = li.offsetTop;
    else if (li.offsetTop + li.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = li.offsetTop + li.offsetHeight - list.clientHeight;
    }
  }

  function renderMoves() {
    var list = $("moves");
    list.innerHTML = "";
    detail.moves.forEach(function (m, i) { appendMove(m, detail.think_ms[i], i); });
    list.scrollTop = list.scrollHeight;
  }

  function appendMove(text, think, i) {
    var li = document.createElement("li");
    li.textContent = text + (think != null ? "  (" + (think / 1000).toFixed(2) + " s)" : "");
    li.addEventListener("click", function () { show(i + 1); });
    $("moves").appendChild(li);
  }

  function renderHeader() {
    var g = detail.game;
    setText($("title"), detail.match + " · " + detail.tournament + " · " + g);
    document.title = "arena: " + detail.match;
    setText($("first-name"), detail.first + " (" + Board.colourLetter(g, "first") + ", first)");
    setText($("second-name"), detail.second + " (" + Board.colourLetter(g, "second") + ", second)");
    setText($("result"), detail.status === "finished" ? resultText(detail) : "playing");
    if (detail.record) {
      var a = $("record");
      a.href = recordUrl(detail.record);
      a.textContent = "record file: " + detail.record;
      a.hidden = false;
    }
  }

  function setClocks(c) {
    clocks.set(c, Board.parse(detail.positions[detail.positions.length - 1]).side, detail.status === "playing");
  }

  function load() {
    return getJSON("games/" + encodeURIComponent(id)).then(function (d) {
      var atEnd = !detail || shown === detail.positions.length - 1;
      detail = d;
      renderHeader();
      renderMoves();
      show(atEnd ? d.positions.length - 1 : shown);
      setClocks(d.clocks);
    }).catch(function (e) { setText($("result"), String(e.message || e)); });
  }

  $("first-move").onclick = function () { show(0); };
  $("prev").onclick = function () { show(shown - 1); };
  $("next").onclick = function () { show(shown + 1); };
  $("last-move").onclick = function () { show(detail ? detail.positions.length - 1 : 0); };
  document.addEventListener("keydown", function (e) {
    if (e.key === "ArrowLeft") show(shown - 1);
    else if (e.key === "ArrowRight") show(shown + 1);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(detail ? detail.positions.length - 1 : 0);
  });
  hideLiveOnly();
  load();
  follow({
    move: function (m) {
      if (!detail || m.match !== detail.match) return;
      if (m.ply !== detail.moves.length + 1) { load(); return; }
      var atEnd = shown === detail.positions.length - 1;
      detail.moves.push(m.move);
      detail.think_ms.push(m.think_ms == null ? null : m.think_ms);
      detail.positions.push(m.position);
      appendMove(m.move, m.think_ms, detail.moves.length - 1);
      setClocks(m.clocks);
      if (atEnd) show(detail.positions.length - 1);
    },
    end: function (e) { if (e.match === id) load(); },
    start: function (g) { if (g.match === id) load(); },
    resync: load,
  }, id);
  if (!STATIC) setInterval(function () { clocks.tick(); }, 100);
}

/* ---------- the human seat ---------- */

function playPage() {
  var socket = null;
  var me = null;
  var current = null; // {match, game, side, rules, first, second, position, moves, legal, myTurn, movesFailed}
  var clicks = [];
  var clocks = new ClockTicker();
  var leagueOver = false;
  var removing = null; // the chosen move that still needs its removed stones
  var picked = []; // the stones clicked for it so far

  function status(text) { setText($("status"), text); }
  function error(text) { setText($("error"), text || ""); }

  function send(message) {
    if (socket && socket.readyState === 1) socket.send(JSON.stringify(message));
  }

  // Each legal move is {text, remove, removable}: a Jiu move that forms squares is listed
  // once; after its points are clicked the player clicks the `remove` enemy stones to take
  // among `removable`, and the move is sent as text + "+" + each stone.
  function choiceOf(entry) {
    if (typeof entry === "string") return { text: entry, remove: 0, removable: [] };
    return { text: String(entry.move), remove: Number(entry.remove) || 0, removable: entry.removable || [] };
  }

  function candidates() {
    if (!current || !current.legal) return [];
    return current.legal.filter(function (m) {
      var pts = Board.movePoints(m.text);
      for (var i = 0; i < clicks.length; i++) if (pts[i] !== clicks[i]) return false;
      return pts.length >= clicks.length;
    });
  }

  // A game whose turns place several stones (Connect6) lists single points; a turn joins
  // as many of them as the position's `stones` key says (the game's stones per turn if absent).
  function placesSeveral() {
    var f = Board.facts(current.game);
    return !!f && f.stones_per_turn > 1;
  }
  function stonesThisTurn() {
    var keys = Board.parse(current.position).keys;
    var f = Board.facts(current.game);
    return placesSeveral() ? Number(keys.stones || f.stones_per_turn) : 1;
  }

  function redraw() {
    if (!current) return;
    var targets = [];
    if (current.myTurn && current.legal) {
      if (removing) {
        targets = removing.removable.filter(function (p) { return picked.indexOf(p) < 0; });
      } else if (!placesSeveral()) {
        candidates().forEach(function (m) {
          var p = Board.movePoints(m.text)[clicks.length];
          if (p && targets.indexOf(p) < 0) targets.push(p);
        });
      }
    }
    Board.draw($("board"), current.game, current.position, {
      last: current.moves.length ? Board.movePoints(current.moves[current.moves.length - 1]) : [],
      selected: clicks.concat(picked),
      targets: clicks.length ? targets : [],
      onPoint: onPoint,
    });
    renderChoice();
  }

  // Buttons for moves the clicks so far complete (and special moves such as Hex's swap).
  function renderChoice() {
    var box = $("choice");
    box.innerHTML = "";
    if (!current || !current.myTurn || !current.legal) return;
    if (removing) {
      var left = removing.remove - picked.length;
      var note = document.createElement("span");
      note.className = "remove-note";
      note.textContent = removing.text + " forms squares: click " + left + " more of the opponent's stones to remove";
      box.appendChild(note);
      return;
    }
    var options = [];
    if (placesSeveral()) {
      if (clicks.length && clicks.length === stonesThisTurn()) options.push({ text: clicks.join(","), remove: 0, removable: [] });
    } else {
      candidates().forEach(function (m) {
        var pts = Board.movePoints(m.text);
        if (pts.length === clicks.length && clicks.length) options.push(m);
      });
      current.legal.forEach(function (m) { if (!Board.movePoints(m.text).length) options.push(m); });
    }
    options.forEach(function (m) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "play-move";
      b.setAttribute("data-move", m.text);
      b.textContent = m.remove ? "play " + m.text + " and remove " + m.remove : "play " + m.text;
      b.onclick = function () { choose(m); };
      box.appendChild(b);
    });
  }

  // Plays a move, or first asks for the stones it removes.
  function choose(m) {
    if (!m.remove) { play(m.text); return; }
    removing = m;
    picked = [];
    redraw();
  }

  function play(move) {
    if (!current || !current.myTurn) return;
    current.myTurn = false;
    clicks = [];
    removing = null;
    picked = [];
    send({ type: "move", match: current.match, move: move });
    status("move " + move + " sent; waiting for " + opponentName());
    dismissResult();
    redraw();
  }

  function opponentName() { return current.side === "first" ? current.second : current.first; }

  function onPoint(name) {
    if (!current || !current.myTurn || !current.legal) return;
    error("");
    if (removing) {
      if (picked.indexOf(name) >= 0) { picked.splice(picked.indexOf(name), 1); redraw(); return; }
      if (removing.removable.indexOf(name) < 0) { error(name + " holds no opponent stone this move can remove"); return; }
      picked.push(name);
      if (picked.length === removing.remove) { play(removing.text + "+" + picked.join("+")); return; }
      redraw();
      return;
    }
    if (placesSeveral()) {
      if (clicks.indexOf(name) >= 0) { clicks.splice(clicks.indexOf(name), 1); redraw(); return; }
      if (!current.legal.some(function (m) { return m.text === name; })) { error(name + " is not empty"); return; }
      clicks.push(name);
      if (clicks.length === stonesThisTurn()) { play(clicks.join(",")); return; }
      redraw();
      return;
    }
    clicks.push(name);
    var left = candidates();
    if (!left.length) {
      clicks.pop();
      error("no legal move goes through " + clicks.concat([name]).join(" → "));
      return;
    }
    var exact = left.filter(function (m) { return Board.movePoints(m.text).length === clicks.length; });
    if (exact.length === 1 && left.length === 1) { choose(exact[0]); return; }
    redraw();
  }

  var refreshes = 0;
  function refresh() {
    // The position comes from the server (the pages hold no rules), then the legal moves. Only
    // the latest refresh applies its answers.
    var mine = ++refreshes;
    current.movesFailed = null;
    return getJSON("games/" + encodeURIComponent(current.match)).then(function (d) {
      if (mine !== refreshes) return;
      current.position = d.positions[d.positions.length - 1];
      current.moves = d.moves;
      current.first = d.first;
      current.second = d.second;
      clocks.set(d.clocks, current.myTurn ? current.side : Board.parse(current.position).side, d.status === "playing");
      setText($("first-name"), d.first + " (" + Board.colourLetter(d.game, "first") + ")");
      setText($("second-name"), d.second + " (" + Board.colourLetter(d.game, "second") + ")");
      var list = $("moves");
      list.innerHTML = "";
      d.moves.forEach(function (m) { var li = document.createElement("li"); li.textContent = m; list.appendChild(li); });
      if (!current.myTurn) { current.legal = null; redraw(); return; }
      var q = "moves?game=" + encodeURIComponent(current.game) + "&position=" + encodeURIComponent(current.position) +
        "&rules=" + encodeURIComponent(JSON.stringify(current.rules || {}));
      return fetch("/api/" + q).then(function (r) { return r.json(); }).then(function (m) {
        if (mine !== refreshes) return;
        if (m.error) { current.legal = []; current.movesFailed = String(m.error); error(m.error); } else { current.legal = (m.moves || []).map(choiceOf); }
        redraw();
      });
    }).catch(function (e) {
      var why = String(e.message || e);
      if (mine === refreshes && current) current.movesFailed = why;
      error(why);
    });
  }

  function onMessage(msg) {
    if (msg.type === "welcome") {
      status("logged in as " + msg.name + "; waiting for a game");
    } else if (msg.type === "start") {
      current = { match: msg.match, game: msg.game, side: msg.side, rules: msg.rules, first: "", second: "",
        position: "", moves: msg.moves || [], legal: null, myTurn: false };
      clicks = []; removing = null; picked = [];
      askResign(false);
      // Who moves first is the server's to say (the page holds no rules): its `turn`, or the
      // opponent's move that comes with it, tells.
      status("game " + msg.match + " against " + msg.opponent + " started: you are " + msg.side + " (" + msg.colour + "); waiting for the server");
      refresh();
    } else if (msg.type === "turn") {
      if (!current || current.match !== msg.match) return;
      current.myTurn = true;
      clicks = []; removing = null; picked = [];
      var other = current.side === "first" ? "second" : "first";
      var told = {};
      told[current.side + "_ms"] = msg.clock.you_ms;
      told[other + "_ms"] = msg.clock.opponent_ms;
      clocks.set(told, current.side, true);
      status("loading your turn in " + msg.match + "…");
      // "your turn" once the legal moves are in (clicks need them).
      var asked = refreshes + 1;
      refresh().then(function () {
        if (!current || !current.myTurn || current.match !== msg.match || asked !== refreshes) return;
        if (current.legal && !current.movesFailed) {
          status("your turn (" + current.side + ", " + Board.colourLetter(current.game, current.side) + ") at ply " + msg.ply + " in " + msg.match);
        } else {
          status("your turn in " + msg.match + ", but its legal moves could not be loaded (" + (current.movesFailed || "no answer") +
            "); log in again to retry");
        }
      });
    } else if (msg.type === "end") {
      if (current && current.match === msg.match) { current.myTurn = false; current.legal = null; clocks.stop(); }
      var outcome = "you " + (msg.result === "win" ? "won" : msg.result === "loss" ? "lost" : "drew") +
        " by " + String(msg.reason).replace(/_/g, " ");
      status("game over: " + msg.match + ": " + outcome + "; waiting for the next game");
      showResult(msg.match, outcome);
      if (current && current.match === msg.match) refresh();
    } else if (msg.type === "error" && msg.code === "league_over") {
      leagueOver = true;
      if (current) { current.myTurn = false; current.legal = null; clocks.stop(); redraw(); }
      status("the league is over: every tournament is finished; there is nothing more to play here");
    } else if (msg.type === "error") {
      error(msg.code + ": " + msg.message);
      if (current && msg.match === current.match && msg.code !== "illegal_move") { current.myTurn = true; refresh(); }
    } else if (msg.type === "ping") {
      send({ type: "pong", id: msg.id });
    }
  }

  function login() {
    error("");
    if (socket) socket.close();
    me = $("name").value.trim();
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
    socket = new WebSocket(url);
    status("connecting…");
    socket.onopen = function () {
      send({ type: "hello", protocol: 1, name: me, token: $("token").value, games: Board.gameIds(), max_games: 1, engine: "arena web page" });
    };
    socket.onmessage = function (e) {
      try { onMessage(JSON.parse(e.data)); } catch (err) { error(String(err)); }
    };
    socket.onclose = function () {
      if (!leagueOver) status("disconnected" + (current ? " (log in again within the reconnect grace to resume)" : ""));
    };
  }

  // A finished game's result stays in view (the banner until the person dismisses it or moves
  // in the next game; the list for the whole visit), whatever game starts next.
  function showResult(match, outcome) {
    var banner = $("last-result");
    setText($("last-result-text"), "game " + match + ": " + outcome);
    banner.hidden = false;
    var li = document.createElement("li");
    li.setAttribute("data-match", match);
    li.appendChild(link(gameUrl(match), match));
    li.appendChild(document.createTextNode(": " + outcome));
    $("my-games").appendChild(li);
    $("my-games-section").hidden = false;
  }
  function dismissResult() { $("last-result").hidden = true; }

  // Resigning asks first.
  function askResign(ask) {
    $("resign-confirm").hidden = !ask;
    $("resign").hidden = ask;
    if (ask && current) setText($("resign-question"), "Resign " + current.match + " against " + opponentName() + "?");
  }

  // The form never submits (no inline handler: the pages' CSP forbids them).
  $("login-form").onsubmit = function (e) { e.preventDefault(); return false; };
  $("login").onclick = login;
  $("clear").onclick = function () { clicks = []; removing = null; picked = []; error(""); redraw(); };
  $("resign").onclick = function () { if (current) askResign(true); };
  $("resign-no").onclick = function () { askResign(false); };
  $("resign-yes").onclick = function () {
    askResign(false);
    if (current) send({ type: "resign", match: current.match });
  };
  $("last-result-close").onclick = dismissResult;
  setInterval(function () { clocks.tick(); }, 100);
}

// Every page first learns the games' facts (board sizes, colours, ...) from the server.
(function () {
  var page = document.body.getAttribute("data-page");
  function start() {
    if (page === "league") leaguePage();
    else if (page === "game") gamePage();
    else if (page === "play") playPage();
  }
  getJSON("games/meta").then(Board.setGames).catch(function () {}).then(start);
})();
