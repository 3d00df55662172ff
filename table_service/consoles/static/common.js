"use strict";
// What every console shares: language, sign-in, API calls with their errors, the
// server's clock, the table stream with resume, and how a card is drawn.
const LT = (() => {
  const I18N = window.LT_I18N;
  const LANG_KEY = "lt.lang";
  const TOKEN_KEY = "lt.token";
  let lang = pickLang();
  const langListeners = [];

  function pickLang() {
    const fromUrl = new URLSearchParams(location.search).get("lang");
    if (fromUrl && I18N[fromUrl]) return fromUrl;
    const saved = localStorage.getItem(LANG_KEY);
    if (saved && I18N[saved]) return saved;
    return (navigator.language || "en").toLowerCase().startsWith("vi") ? "vi" : "en";
  }

  function t(key, vars) {
    let text = (I18N[lang] && I18N[lang][key]) || I18N.en[key] || key;
    if (vars) {
      for (const [k, v] of Object.entries(vars)) text = text.split(`{${k}}`).join(String(v));
    }
    return text;
  }

  function has(key) {
    return Boolean(I18N.en[key]);
  }

  function applyI18n(root = document) {
    root.querySelectorAll("[data-i18n]").forEach((node) => {
      node.textContent = t(node.dataset.i18n);
    });
    root.querySelectorAll("[data-i18n-placeholder]").forEach((node) => {
      node.placeholder = t(node.dataset.i18nPlaceholder);
    });
    document.documentElement.lang = lang;
    if (document.body && document.body.dataset.title) document.title = `${t(document.body.dataset.title)} · livetable`;
  }

  function setLang(next, persist = true) {
    if (!I18N[next]) return;
    lang = next;
    if (persist) localStorage.setItem(LANG_KEY, next);
    applyI18n();
    langListeners.forEach((fn) => fn(next));
  }

  function langSwitch(container, { persist = true } = {}) {
    container.replaceChildren();
    for (const code of Object.keys(I18N)) {
      const button = el("button", { type: "button", class: "lang", "data-lang": code }, code.toUpperCase());
      button.title = I18N[code]["lang.name"];
      button.setAttribute("aria-pressed", String(code === lang));
      button.addEventListener("click", () => setLang(code, persist));
      container.append(button);
    }
    langListeners.push((now) => {
      container.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.lang === now)));
    });
  }

  function onLang(fn) {
    langListeners.push(fn);
  }

  // -- DOM helpers ---------------------------------------------------------------------------
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  function cardEl(code, { faceDown = false, size = "" } = {}) {
    if (!code || faceDown) {
      return el("div", { class: `card face-down ${size}`, "data-card": "hidden", "aria-label": t("card.face_down") });
    }
    const rank = code.slice(0, -1) === "T" ? "10" : code.slice(0, -1);
    const suit = code.slice(-1);
    const red = suit === "H" || suit === "D";
    return el(
      "div",
      { class: `card ${red ? "red" : "black"} ${size}`, "data-card": code, "aria-label": code },
      el("span", { class: "rank" }, rank),
      el("span", { class: "suit" }, SUITS[suit] || suit),
    );
  }

  // A card as text: "TS" -> "10♠".
  function cardText(code) {
    if (!code || typeof code !== "string") return "?";
    const rank = code.slice(0, -1) === "T" ? "10" : code.slice(0, -1);
    return rank + (SUITS[code.slice(-1)] || code.slice(-1));
  }

  function toast(message, kind = "info") {
    let box = document.getElementById("toasts");
    if (!box) {
      box = el("div", { id: "toasts", role: "status", "aria-live": "polite" });
      document.body.append(box);
    }
    const item = el("div", { class: `toast ${kind}` }, message);
    box.append(item);
    setTimeout(() => item.remove(), kind === "error" ? 9000 : 4000);
  }

  // A confirmation that works by touch and by keyboard (Enter confirms, Escape cancels).
  function confirmDialog(message, { okLabel } = {}) {
    return new Promise((resolve) => {
      const dialog = el("dialog", { class: "confirm", id: "confirm-dialog" });
      const ok = el("button", { type: "button", class: "primary", "data-action": "confirm" }, okLabel || t("action.confirm"));
      const cancel = el("button", { type: "button", "data-action": "cancel" }, t("action.cancel"));
      dialog.append(el("p", { class: "confirm-text" }, message), el("div", { class: "buttons" }, cancel, ok));
      document.body.append(dialog);
      const done = (value) => {
        dialog.close();
        dialog.remove();
        resolve(value);
      };
      ok.addEventListener("click", () => done(true));
      cancel.addEventListener("click", () => done(false));
      dialog.addEventListener("cancel", (e) => {
        e.preventDefault();
        done(false);
      });
      dialog.showModal();
      ok.focus();
    });
  }

  // -- API -------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, code, message, body) {
      super(message);
      this.status = status;
      this.code = code;
      this.body = body;
    }
  }

  // Errors come as RFC 9457 problem details ({type, title, status, detail, code}), as the
  // table's refusals ({error, reason}) or as FastAPI's ({detail: str | [{msg}]}).
  function problemMessage(body, status) {
    if (!body || typeof body !== "object") return `HTTP ${status}`;
    if (typeof body.detail === "string" && body.detail) return body.detail;
    if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg || JSON.stringify(d)).join("; ");
    if (Array.isArray(body.errors)) return body.errors.map((d) => d.detail || d.msg || JSON.stringify(d)).join("; ");
    return body.reason || body.title || body.message || `HTTP ${status}`;
  }

  let unauthorized = null;
  function onUnauthorized(fn) {
    unauthorized = fn;
  }

  async function api(method, path, body, { auth = true, quiet = false } = {}) {
    const headers = { Accept: "application/json, application/problem+json" };
    const token = getToken();
    if (auth && token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (exc) {
      throw new ApiError(0, "network", t("error.network"));
    }
    const type = response.headers.get("content-type") || "";
    const data = type.includes("json") ? await response.json().catch(() => null) : null;
    if (!response.ok) {
      const err = new ApiError(response.status, (data && (data.code || data.error)) || String(response.status), problemMessage(data, response.status), data);
      if (response.status === 401 && auth && !quiet && unauthorized) unauthorized(err.message);
      throw err;
    }
    return data;
  }

  // -- sign-in ---------------------------------------------------------------------------------
  function getToken() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  }

  // Shows the sign-in form until a token of one of `roles` is given; resolves with whoami.
  function signIn(roles, { form, error }) {
    return new Promise((resolve) => {
      const show = (message) => {
        form.closest("section").hidden = false;
        error.textContent = message || "";
        error.hidden = !message;
        const input = form.querySelector("input[name=token]");
        input.value = "";
        input.focus();
      };
      const attempt = async (token, fromForm) => {
        sessionStorage.setItem(TOKEN_KEY, token);
        try {
          const who = await api("GET", "/api/v1/whoami", undefined, { auth: true, quiet: true });
          if (!roles.includes(who.role)) {
            sessionStorage.removeItem(TOKEN_KEY);
            show(t("auth.role", { role: t(`role.${who.role}`), roles: roles.map((r) => t(`role.${r}`)).join(" / ") }));
            return;
          }
          form.closest("section").hidden = true;
          resolve(who);
        } catch (exc) {
          sessionStorage.removeItem(TOKEN_KEY);
          show(exc.status === 401 ? t("auth.invalid") : exc.message);
          if (!fromForm && exc.status === 401) error.textContent = t("auth.invalid");
        }
      };
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const token = form.querySelector("input[name=token]").value.trim();
        if (token) attempt(token, true);
      });
      const saved = getToken();
      if (saved) attempt(saved, false);
      else show("");
    });
  }

  // -- clock -----------------------------------------------------------------------------------
  let offset = 0;
  async function syncClock() {
    try {
      const t0 = Date.now();
      const data = await api("GET", "/api/v1/console/time", undefined, { auth: false });
      const t1 = Date.now();
      offset = Date.parse(data.now) - (t0 + t1) / 2;
    } catch (exc) {
      offset = 0;
    }
  }
  function now() {
    return Date.now() + offset;
  }
  function secondsLeft(deadline) {
    if (!deadline) return null;
    const ms = Date.parse(deadline) - now();
    return Number.isFinite(ms) ? Math.max(0, ms / 1000) : null;
  }

  // -- stream ----------------------------------------------------------------------------------
  // Resumes after a dropped connection from the last sequence number shown: the server
  // replays what was missed, and anything at or below it is dropped, so no event is missed
  // and none is shown twice. Refusals (4401/4403/4404, or a refused handshake) are final.
  const streams = [];
  function stream({ path, afterSeq = 0, auth = false, onEvent, onStatus = () => {}, onFatal = () => {} }) {
    const state = {
      last: afterSeq, ws: null, closed: false, attempt: 0, received: 0, seqs: [], connects: 0, waits: [],
    };
    const connect = () => {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      const url = `${scheme}://${location.host}${path}?after_seq=${state.last}`;
      const token = getToken();
      const ws = auth && token ? new WebSocket(url, ["livetable.v1", `bearer.${token}`]) : new WebSocket(url);
      state.ws = ws;
      let opened = false;
      onStatus(state.attempt ? "reconnecting" : "connecting");
      ws.onopen = () => {
        opened = true;
        state.connects += 1;
        onStatus("live");
      };
      ws.onmessage = (message) => {
        let event;
        try {
          event = JSON.parse(message.data);
        } catch (exc) {
          return;
        }
        if (typeof event.seq !== "number" || event.seq <= state.last) return;
        state.attempt = 0; // the connection delivers: the next drop starts the backoff anew
        state.last = event.seq;
        state.received += 1;
        state.seqs.push(event.seq);
        if (state.seqs.length > 5000) state.seqs.shift();
        try {
          onEvent(event);
        } catch (exc) {
          console.error(exc);
        }
      };
      ws.onclose = async (event) => {
        if (state.closed || state.ws !== ws) return;
        if ([4401, 4403, 4404].includes(event.code)) {
          onStatus("closed");
          onFatal(event.code, event.reason);
          return;
        }
        if (!opened && auth) {
          // Refused before the socket opened (an HTTP 403 at the handshake): ask why.
          try {
            await api("GET", "/api/v1/whoami");
          } catch (exc) {
            if (exc.status === 401) {
              onStatus("closed");
              onFatal(4401, exc.message);
              return;
            }
          }
        }
        // The wait doubles until a connection delivers an event, not merely until one
        // opens: a server that accepts and then refuses (4429 too many streams, 4421 the
        // table runs elsewhere, 4503 not serving yet) would otherwise be asked again every
        // 400 ms for ever. Drawn in its upper half, so pages dropped together (a studio's
        // process taken over) do not all come back in the same instant.
        state.attempt += 1;
        onStatus("reconnecting");
        const wait = Math.min(5000, 200 * 2 ** Math.min(state.attempt, 5));
        state.waits.push(wait);
        setTimeout(connect, wait * (0.5 + Math.random() / 2));
      };
    };
    connect();
    const handle = {
      get last() {
        return state.last;
      },
      get received() {
        return state.received;
      },
      // What this page was sent, in order (the last 5000): the tests check it has no gap
      // and no repeat against the log.
      get seqs() {
        return state.seqs.slice();
      },
      get connects() {
        return state.connects;
      },
      // The backoff's ceiling before each reconnect (the wait is drawn in its upper half).
      get waits() {
        return state.waits.slice();
      },
      first: afterSeq,
      drop() {
        // For tests and the benchmark: cut the connection as a network would.
        if (state.ws) state.ws.close();
      },
      close() {
        state.closed = true;
        if (state.ws) state.ws.close();
      },
    };
    streams.push(handle);
    return handle;
  }

  function statusBadge(node, status) {
    node.dataset.status = status;
    node.textContent = t(`stream.${status === "closed" ? "live" : status}`);
    if (status === "closed") node.textContent = t("stream.closed", { reason: "" });
  }

  function fmtTime(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    if (Number.isNaN(d.getTime())) return ts;
    return d.toISOString().slice(11, 23);
  }

  // An amount (integer minor units, as the service keeps money) with the page's digit
  // grouping: 12,500 in English, 12.500 in Vietnamese.
  function fmtMoney(n) {
    if (n === null || n === undefined || n === "") return "";
    const value = Number(n);
    if (!Number.isFinite(value)) return String(n);
    return new Intl.NumberFormat(lang === "vi" ? "vi-VN" : "en-GB", { maximumFractionDigits: 0 }).format(value);
  }

  // A moment with its date and its time zone, in the zone of `zone` (default: the
  // browser's), e.g. "2026-12-05 13:04:09.281 UTC" or "… GMT+7".
  function fmtDateTime(ts, { zone, ms = false } = {}) {
    if (!ts) return "";
    const d = new Date(ts);
    if (Number.isNaN(d.getTime())) return String(ts);
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat("en-GB", {
        timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
        minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short",
      }).formatToParts(d).map((p) => [p.type, p.value]),
    );
    const frac = ms ? `.${String(d.getUTCMilliseconds()).padStart(3, "0")}` : "";
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}${frac} ${parts.timeZoneName}`;
  }

  function debounce(fn, ms) {
    let timer = null;
    return (...args) => {
      clearTimeout(timer);
      timer = setTimeout(() => fn(...args), ms);
    };
  }

  // Where a card goes, in words: P1 -> "Player 1", S3H2 -> "Seat 3 · hand 2", DEALER.
  function targetLabel(target) {
    if (!target) return "";
    if (target.label) return target.label;
    const code = target.code || "";
    if (has(`pos.${code}`)) return t(`pos.${code}`);
    const seat = target.seat ?? (code.match(/^S(\d+)/) || [])[1];
    const hand = target.hand ?? (code.match(/H(\d+)$/) || [])[1];
    if (seat !== undefined && seat !== null) {
      return hand !== undefined && hand !== null ? `${t("pos.seat", { seat })} · ${t("pos.hand", { hand })}` : t("pos.seat", { seat });
    }
    return code;
  }

  // A baccarat outcome's totals, whichever shape it has ({player: {total}} or player_total).
  function totals(o) {
    if (!o) return { player: undefined, banker: undefined };
    const pick = (side) => (o[`${side}_total`] !== undefined ? o[`${side}_total`] : o[side] && o[side].total);
    return { player: pick("player"), banker: pick("banker") };
  }

  // Who a decision waits for: "seat:3" -> "Seat 3", "behind:<bet>" -> bet behind, "banker".
  function actorLabel(actor) {
    if (actor && typeof actor === "object") return targetLabel(actor);
    const [kind, who] = String(actor).split(":");
    if (kind === "seat") return t("pos.seat", { seat: who });
    if (kind === "behind") return t("turn.behind");
    if (kind === "banker") return t("pos.BANKER");
    if (kind === "supervisor") return t("role.supervisor");
    return String(actor);
  }

  // Who did something, as the log records it ("reader:bac-1-shoe", "supervisor:sup-bao",
  // "system:rules"), in words: "Reader bac-1-shoe", "Supervisor sup-bao", "Table rules".
  function principalLabel(principal) {
    if (!principal) return "";
    const [kind, ...rest] = String(principal).split(":");
    if (kind === "system") return t("actor.rules");
    return has(`actor.${kind}`) ? t(`actor.${kind}`, { name: rest.join(":") }) : String(principal);
  }

  // A word of the log or the rules (a step, a bet type, a move …) in the page's language:
  // the dictionary's `<prefix>.<value>`, or the value itself where it has none.
  function term(prefix, value) {
    if (value === null || value === undefined) return "";
    return has(`${prefix}.${value}`) ? t(`${prefix}.${value}`) : String(value);
  }

  function incidentName(kind) {
    return term("incident", kind);
  }

  // The procedure of an incident (the catalogue's English text) in the page's language:
  // the dictionary's translation of that catalogue entry, where there is one.
  function procedureText(item) {
    if (!item) return "";
    const key = item.procedure_key ? `procedure.${item.procedure_key}` : null;
    if (key && I18N[lang] && I18N[lang][key]) return I18N[lang][key];
    return item.procedure || "";
  }

  // The Xì Dách house banker's required move, as the rules word it ("draw", "stand",
  // "check all", "check seat 3").
  function houseMove(text) {
    if (!text) return "";
    const seat = String(text).match(/^check seat (\d+)$/);
    if (seat) return t("house.check_seat", { seat: seat[1] });
    return term("house", String(text).replace(/ /g, "_"));
  }

  function details(d) {
    return Object.entries(d || {})
      .map(([k, v]) => `${term("detail", k)}: ${typeof v === "object" && v !== null ? JSON.stringify(v) : typeof v === "boolean" ? t(v ? "value.yes" : "value.no") : v}`)
      .join(" · ");
  }

  return {
    t,
    has,
    lang: () => lang,
    setLang,
    applyI18n,
    langSwitch,
    onLang,
    el,
    cardEl,
    cardText,
    toast,
    confirmDialog,
    api,
    ApiError,
    problemMessage,
    onUnauthorized,
    getToken,
    signIn,
    signOut,
    syncClock,
    now,
    secondsLeft,
    stream,
    streams,
    statusBadge,
    fmtTime,
    fmtMoney,
    fmtDateTime,
    debounce,
    targetLabel,
    incidentName,
    term,
    procedureText,
    houseMove,
    details,
    actorLabel,
    principalLabel,
    totals,
  };
})();
window.LT = LT;
