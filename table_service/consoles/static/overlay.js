"use strict";
// The studio overlay: a 1920x1080 browser source for the vision mixer, from the public
// stream only (no token). Cards by position with totals, countdown, result banner and,
// for baccarat, the five roads computed by the server's rules code.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const tableId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const params = new URLSearchParams(location.search);
  if (params.has("preview")) document.body.classList.add("preview");
  const state = { view: null, roads: null, stream: null, latency: [] };
  window.LT_OVERLAY = state;

  LT.applyI18n();
  LT.onLang(() => render());

  async function start() {
    await LT.syncClock();
    await Promise.all([refreshView(), refreshRoads()]);
    state.stream = LT.stream({
      path: `/api/v1/public/tables/${encodeURIComponent(tableId)}/stream`,
      afterSeq: state.view ? state.view.last_seq : 0,
      onEvent,
      onStatus: (s) => LT.statusBadge($("stream-badge"), s),
      onFatal: (code, reason) => LT.statusBadge($("stream-badge"), "closed") || console.warn(code, reason),
    });
    setInterval(tick, 200);
  }

  async function refreshView() {
    try {
      state.view = await api("GET", `/api/v1/public/tables/${encodeURIComponent(tableId)}/view`, undefined, { auth: false });
      render();
    } catch (exc) {
      $("ov-title").textContent = exc.message;
    }
  }

  async function refreshRoads() {
    if (state.view && state.view.game !== "baccarat") {
      state.roads = null;
      renderRoads();
      return;
    }
    try {
      state.roads = await api("GET", `/api/v1/tables/${encodeURIComponent(tableId)}/roads`, undefined, { auth: false });
    } catch (exc) {
      state.roads = null;
    }
    renderRoads();
  }
  const viewSoon = LT.debounce(refreshView, 40);
  const roadsSoon = LT.debounce(refreshRoads, 40);

  function onEvent(event) {
    const d = event.data || {};
    if (event.type === "card_dealt") {
      const r = state.view && state.view.round;
      if (r && r.round_id === event.round_id && r.layout && r.layout.positions && d.position) {
        r.layout.positions = [...r.layout.positions.filter((x) => x.position !== d.position), { position: d.position, card: d.card }];
        render();
      }
    }
    viewSoon();
    if (["round_result", "round_settled", "round_voided", "shoe_inserted", "shoe_ended"].includes(event.type)) roadsSoon();
  }

  function render() {
    const view = state.view;
    if (!view) return;
    const r = view.round;
    const parts = [t(`game.${view.game}`), `${t("table.table")} ${view.table_id}`];
    if (r) parts.push(`${t("table.round")} ${r.game_number}`);
    $("ov-title").textContent = parts.join(" · ");
    const banner = Render.resultBanner(view, { cls: "ov-banner" });
    const box = $("ov-banner");
    if (banner && r && ["result", "settled", "voided"].includes(r.phase)) {
      box.className = banner.className;
      box.dataset.result = banner.dataset.result;
      box.replaceChildren(...banner.childNodes);
      box.hidden = false;
    } else {
      box.hidden = true;
      box.dataset.result = "";
    }
    const table = $("ov-table");
    const seats = $("ov-seats");
    if (view.game === "baccarat" && r && !(r.layout && r.layout.seats)) {
      Render.baccarat(table, r, { size: "big", cls: "ov-hand" });
      seats.replaceChildren();
    } else if (r) {
      table.replaceChildren();
      renderSeats(seats, r);
    } else {
      table.replaceChildren();
      seats.replaceChildren();
    }
    tick();
  }

  function renderSeats(box, r) {
    box.replaceChildren();
    const layout = r.layout || {};
    const turn = r.turn || {};
    const active = new Set((turn.actors || []).map((a) => String(typeof a === "object" ? a.seat : String(a).replace(/^seat:/, ""))));
    for (const seat of layout.seats || []) {
      const node = el("div", { class: `ov-seat ${active.has(String(seat.seat)) ? "active" : ""}`, "data-seat": seat.seat }, el("div", { class: "head" }, t("pos.seat", { seat: seat.seat })));
      for (const hand of seat.hands || []) {
        node.append(el("div", { class: "cards", "data-hand": hand.hand ?? "" }, (hand.cards || []).map((c) => LT.cardEl(c, { faceDown: !c || c === "??" || c === "XX" }))), el("div", { class: "head" }, el("span", {}, LT.term("status", hand.status)), el("span", {}, hand.total ?? "")));
      }
      box.append(node);
    }
    for (const hand of Render.hands(layout)) {
      const id = hand.seat !== undefined && hand.seat !== null ? `seat-${hand.seat}-${hand.hand}` : hand.hand;
      box.append(
        el("div", { class: `ov-seat ${active.has(String(hand.seat)) ? "active" : ""}`, "data-hand": id },
          el("div", { class: "head" }, Render.handLabel(hand), el("span", {}, hand.total ?? "")),
          el("div", { class: "cards" }, (hand.cards || []).map((c) => LT.cardEl(c, { faceDown: !c || c === "??" || c === "XX" }))),
          el("div", { class: "muted" }, Render.handFlags(hand).join(" · "))),
      );
    }
  }

  function tick() {
    const r = state.view && state.view.round;
    const box = $("ov-countdown");
    const left = r && r.phase === "betting" ? LT.secondsLeft(r.deadline) : r && r.turn ? LT.secondsLeft(r.turn.deadline) : null;
    box.hidden = left === null;
    box.textContent = left === null ? "" : String(Math.ceil(left));
  }

  // -- roads -----------------------------------------------------------------------------------
  function grid(node, cells, cell, draw) {
    node.style.setProperty("--cell", `${cell}px`);
    const width = node.parentElement.clientWidth || 600;
    const fit = Math.max(6, Math.floor(width / cell));
    const maxCol = cells.reduce((m, c) => Math.max(m, c.col), -1);
    const shift = Math.max(0, maxCol + 1 - fit);
    node.replaceChildren();
    node.style.gridTemplateColumns = `repeat(${fit}, ${cell}px)`;
    node.style.width = `${fit * cell}px`;
    for (const c of cells) {
      if (c.col < shift) continue;
      const box = el("div", { class: "road-cell" });
      box.style.gridColumn = String(c.col - shift + 1);
      box.style.gridRow = String(c.row + 1);
      draw(box, c);
      node.append(box);
    }
  }

  const LETTER = { banker: "B", player: "P", tie: "T" };
  function pairs(box, c) {
    if (c.banker_pair) box.append(el("span", { class: "dot banker-pair" }));
    if (c.player_pair) box.append(el("span", { class: "dot player-pair" }));
  }

  function renderRoads() {
    const roads = state.roads;
    $("ov-roads").hidden = !roads;
    if (!roads) return;
    const panel = $("ov-roads");
    panel.dataset.rounds = String(roads.counts.rounds);
    grid($("bead-plate"), roads.bead_plate, 38, (box, c) => {
      box.dataset.winner = c.winner;
      box.append(el("span", { class: `bead ${c.winner}` }, t(`roads.${LETTER[c.winner]}`)));
      pairs(box, c);
    });
    grid($("big-road"), roads.big_road, 24, (box, c) => {
      box.dataset.winner = c.winner || "none";
      box.dataset.round = String(c.round);
      box.append(el("span", { class: `ring ${c.winner || "none"}` }));
      if (c.ties) {
        box.dataset.ties = String(c.ties);
        box.append(el("span", { class: "tie-slash" }));
        if (c.ties > 1) box.append(el("span", { class: "tie-count" }, String(c.ties)));
      }
      pairs(box, c);
    });
    const derived = [["big-eye-boy", "big_eye_boy", "hollow"], ["small-road", "small_road", "solid"], ["cockroach-pig", "cockroach_pig", "slash"]];
    for (const [id, key, shape] of derived) {
      grid($(id), roads[key], 14, (box, c) => {
        box.dataset.colour = c.colour;
        box.append(el("span", { class: `${shape} ${c.colour}-mark` }));
      });
    }
    const counts = roads.counts;
    const ask = (side) => {
      const p = roads.predictions[side] || {};
      return el("div", { class: "ask", "data-ask": side },
        el("span", { class: `chip ${side}` }, t(`roads.${LETTER[side]}`)),
        t(side === "banker" ? "roads.ask_banker" : "roads.ask_player"),
        ...derived.map(([, key, shape]) => (p[key] ? el("span", { class: "road-cell mini" }, el("span", { class: `${shape} ${p[key]}-mark` })) : el("span", { class: "muted" }, "·"))));
    };
    $("road-stats").replaceChildren(
      el("div", { class: "stat" }, t("roads.rounds", { n: counts.rounds })),
      el("div", { class: "stat", "data-count": "banker" }, el("span", { class: "chip banker" }, t("roads.B")), String(counts.banker)),
      el("div", { class: "stat", "data-count": "player" }, el("span", { class: "chip player" }, t("roads.P")), String(counts.player)),
      el("div", { class: "stat", "data-count": "tie" }, el("span", { class: "chip tie" }, t("roads.T")), String(counts.tie)),
      el("div", { class: "stat" }, el("span", { class: "chip banker" }, "•"), `${t("result.banker_pair")} ${counts.banker_pair}`),
      el("div", { class: "stat" }, el("span", { class: "chip player" }, "•"), `${t("result.player_pair")} ${counts.player_pair}`),
      ask("banker"),
      ask("player"),
    );
  }

  start();
})();
