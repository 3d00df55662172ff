"use strict";
// The studio overlay: a browser source for the vision mixer, keyed over the table's video
// (the page is transparent: html and body), from the public stream only (no token).
// Laid out on a 1920x1080 canvas and scaled to the source's size (1280x720 too).
// Every game: its name, the table and the round number at the table; during betting the
// countdown, the players and the total staked; the cards by position with totals (never
// a face-down card); a result banner; per seat, each hand's outcome (blackjack, Xì Dách);
// for baccarat the five roads, computed by the server's rules code.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const tableId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const params = new URLSearchParams(location.search);
  if (params.has("preview")) document.body.classList.add("preview");
  const state = { view: null, roads: null, stream: null, latency: [], roadsAsked: 0 };
  window.LT_OVERLAY = state;

  // The canvas is 1920x1080; a 1280x720 source (or any other) sees it scaled to fit.
  function fit() {
    const scale = Math.min(window.innerWidth / 1920, window.innerHeight / 1080) || 1;
    document.body.style.setProperty("--ov-scale", String(scale));
  }
  window.addEventListener("resize", fit);
  fit();

  LT.applyI18n();
  LT.onLang(() => {
    render();
    renderRoads();
  });

  async function start() {
    await LT.syncClock();
    await refreshView(); // first: the game decides whether there are roads to ask for
    await refreshRoads();
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

  const isBaccarat = () => Boolean(state.view && state.view.game === "baccarat");

  async function refreshRoads() {
    if (!isBaccarat()) {
      // blackjack and Xì Dách have no roads: never ask (the server would refuse)
      state.roads = null;
      renderRoads();
      return;
    }
    try {
      state.roadsAsked += 1;
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

  const money = (n) => LT.fmtMoney(n);
  const hasCards = (hand) => (hand.cards || []).length > 0;
  const faceDown = (c) => !c || c === "??" || c === "XX";

  // A hand's value as the studio announces it: a special hand by its name (Xì Bàng,
  // Xì Dách, Ngũ Linh, blackjack), else its total; nothing at all before it has a card.
  function handValue(hand) {
    if (!hasCards(hand) || (hand.cards || []).every(faceDown)) return "";
    if (hand.blackjack) return t("hand.blackjack_name");
    const special = ["xi_bang", "xi_dach", "ngu_linh"];
    if (hand.classification && special.includes(hand.classification)) return t(`class.${hand.classification}`);
    if (hand.classification === "quac" || hand.bust) return `${hand.total ?? ""} ${t("ov.bust")}`.trim();
    return hand.total === undefined || hand.total === null ? "" : String(hand.total);
  }

  // The outcome chip of a hand once it is settled (win, lose, push, surrender …).
  function outcomeChip(hand) {
    const result = hand.result;
    if (!result) return null;
    const verdict = hand.reason === "surrender" ? "half_refund" : result;
    return el("span", { class: `ov-outcome ${result}`, "data-outcome": result }, LT.term("verdict", verdict));
  }

  function render() {
    const view = state.view;
    if (!view) return;
    const r = view.round;
    document.body.dataset.game = view.game;
    const number = r && (r.table_round || r.game_number);
    $("ov-game").textContent = t(`game.${view.game}`);
    $("ov-table-name").textContent = `${t("table.table")} ${view.table_id}`;
    $("ov-round").textContent = number ? `${t("table.round")} ${number}` : "";
    $("ov-round").dataset.round = number ? String(number) : "";
    renderBetting(view);
    renderBanner(view);
    const table = $("ov-table");
    const seats = $("ov-seats");
    if (view.game === "baccarat" && r && r.phase !== "betting" && !(r.layout && r.layout.seats)) {
      Render.baccarat(table, r, { size: "big", cls: "ov-hand" });
      seats.replaceChildren();
    } else if (r && r.phase !== "betting") {
      renderSeatGame(table, seats, r);
    } else {
      table.replaceChildren();
      seats.replaceChildren();
    }
    tick();
  }

  // During betting: the call to bet, how many play and how much is staked (public sums).
  function renderBetting(view) {
    const r = view.round;
    const box = $("ov-betting");
    const betting = r && r.phase === "betting";
    box.hidden = !betting;
    if (!betting) return;
    const s = r.stakes || { players: 0, bets: 0, staked: 0 };
    box.replaceChildren(
      el("div", { class: "ov-call" }, t("ov.place_bets")),
      s.bets
        ? el("div", { class: "ov-stats" },
          el("div", { class: "ov-stat", "data-field": "players" }, el("span", { class: "n" }, String(s.players)), el("span", { class: "l" }, t("ov.players", { n: s.players }))),
          el("div", { class: "ov-stat", "data-field": "staked" }, el("span", { class: "n" }, money(s.staked)), el("span", { class: "l" }, t("ov.total_staked"))))
        : el("div", { class: "ov-stats muted", "data-field": "no-bets" }, t("ov.no_bets_yet")),
    );
  }

  function renderBanner(view) {
    const r = view.round;
    const box = $("ov-banner");
    let banner = null;
    if (r && ["result", "settled", "voided"].includes(r.phase)) {
      banner = view.game === "baccarat" || r.phase === "voided" ? Render.resultBanner(view, { cls: "ov-banner" }) : seatGameBanner(view);
    }
    if (!banner) {
      box.hidden = true;
      box.dataset.result = "";
      return;
    }
    box.className = banner.className;
    box.dataset.result = banner.dataset.result;
    box.replaceChildren(...banner.childNodes);
    box.hidden = false;
  }

  // Blackjack and Xì Dách: the dealer's (banker's) hand in words, then the seats' tally.
  function seatGameBanner(view) {
    const layout = view.round.layout || {};
    const house = layout.dealer || layout.banker;
    if (!house || !hasCards(house)) return null;
    const hands = [];
    for (const seat of layout.seats || []) for (const h of seat.hands || []) hands.push(h);
    for (const h of layout.hands || []) hands.push(h);
    const decided = hands.filter((h) => h.result);
    if (!decided.length && !hands.length) return null;
    const who = layout.dealer ? t("hand.dealer") : t("hand.banker");
    const value = handValue(house);
    const head = house.bust || house.classification === "quac" ? t("ov.house_bust", { who }) : `${who} ${value}`;
    const tally = ["win", "push", "lose"].map((k) => [k, decided.filter((h) => h.result === k || (k === "lose" && h.result === "half_refund")).length]).filter(([, n]) => n);
    const sub = tally.map(([k, n]) => t(`tally.${k}`, { n })).join(" · ");
    return el("div", { class: "ov-banner seat-game", "data-result": "settled" }, head, sub ? el("span", { class: "sub" }, sub) : null);
  }

  function handBox(hand, { label, active, id, size = "", cls = "ov-seat" }) {
    const value = handValue(hand);
    return el("div", { class: `${cls} ${active ? "active" : ""} ${hand.result ? `done ${hand.result}` : ""}`, "data-hand": id },
      el("div", { class: "head" }, el("span", { class: "who" }, label), el("span", { class: "total", "data-total": id }, value)),
      el("div", { class: "cards" }, (hand.cards || []).map((c) => LT.cardEl(c, { faceDown: faceDown(c), size }))),
      el("div", { class: "foot" }, outcomeChip(hand), el("span", { class: "flags" }, Render.handFlags({ ...hand, result: null, classification: null, blackjack: false, bust: false }).join(" · "))));
  }

  function renderSeatGame(table, box, r) {
    const layout = r.layout || {};
    const turn = r.turn || {};
    const active = new Set((turn.actors || []).map((a) => String(typeof a === "object" ? a.seat : String(a).replace(/^seat:/, ""))));
    const house = layout.dealer || layout.banker;
    table.replaceChildren();
    box.replaceChildren();
    // along the lower third, the dealer's (banker's) hand first: the middle of the picture
    // is the dealer's own table on the video
    if (house) {
      const id = layout.dealer ? "dealer" : "banker";
      const label = layout.dealer ? t("hand.dealer") : layout.banker && layout.banker.seat && layout.banker.seat !== "house" ? `${t("hand.banker")} · ${t("pos.seat", { seat: layout.banker.seat })}` : t("hand.banker");
      box.append(handBox(house, { label, active: active.has("banker"), id, cls: "ov-seat ov-house" }));
    }
    for (const seat of layout.seats || []) {
      const many = (seat.hands || []).length > 1;
      for (const hand of seat.hands || []) {
        const label = many ? `${t("pos.seat", { seat: seat.seat })} · ${t("pos.hand", { hand: hand.hand })}` : t("pos.seat", { seat: seat.seat });
        box.append(handBox(hand, { label, active: active.has(String(seat.seat)), id: `seat-${seat.seat}-${hand.hand}` }));
      }
    }
    for (const hand of layout.hands || []) {
      const label = hand.hand && hand.hand !== 1 ? `${t("pos.seat", { seat: hand.seat })} · ${t("pos.hand", { hand: hand.hand })}` : t("pos.seat", { seat: hand.seat });
      box.append(handBox(hand, { label, active: active.has(String(hand.seat)), id: `seat-${hand.seat}-${hand.hand}` }));
    }
  }

  // Bets are not on the public stream (accounts and stakes are not public): while betting
  // is open the view, with its count of players and total staked, is asked for each second.
  let lastPoll = 0;
  function pollBetting() {
    const r = state.view && state.view.round;
    if (!r || r.phase !== "betting" || Date.now() - lastPoll < 1000) return;
    lastPoll = Date.now();
    refreshView();
  }

  function tick() {
    pollBetting();
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
    const fitCols = Math.max(6, Math.floor(width / cell));
    const maxCol = cells.reduce((m, c) => Math.max(m, c.col), -1);
    const shift = Math.max(0, maxCol + 1 - fitCols);
    node.replaceChildren();
    node.style.gridTemplateColumns = `repeat(${fitCols}, ${cell}px)`;
    node.style.width = `${fitCols * cell}px`;
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
