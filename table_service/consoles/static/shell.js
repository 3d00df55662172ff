"use strict";
// The header and the sign-in form every signed-in page shares, drawn from the page's
// <header id="shell" data-app="app.dealer" data-badges="table-badge shoe-badge">: the
// page's name, its badges, the stream status, who is signed in, the language switch and
// sign-out; then the sign-in form (input[name=token] and a submit button). The token is
// kept in the tab's session storage (common.js), never in an address.
const Shell = (() => {
  const { el, t } = LT;
  const host = document.getElementById("shell");
  const badges = (host.dataset.badges || "").split(/\s+/).filter(Boolean);

  host.className = "topbar";
  host.replaceChildren(
    el("span", { class: "brand", "data-i18n": host.dataset.app }),
    ...badges.map((id) => el("span", { class: "badge", id })),
    el("span", { class: "badge", id: "stream-badge", "data-status": "connecting" }),
    el("span", { class: "spacer" }),
    el("span", { id: "who", class: "muted" }),
    el("span", { id: "lang-switch", role: "group", "aria-label": t("lang.switch") }),
    el("button", { type: "button", id: "signout", "data-i18n": "auth.signout", hidden: true }),
  );
  const form = el(
    "form",
    { id: "signin-form", autocomplete: "off" },
    el("label", { for: "token", "data-i18n": "auth.token" }),
    el("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true }),
    el("p", { class: "error", id: "signin-error", role: "alert", hidden: true }),
    el("button", { type: "submit", class: "primary", "data-i18n": "auth.submit" }),
  );
  const section = el("section", { class: "signin", id: "signin-section", hidden: true }, el("h1", { "data-i18n": "auth.title" }), form);
  host.after(section);

  LT.applyI18n();
  LT.langSwitch(document.getElementById("lang-switch"));
  LT.onUnauthorized((reason) => {
    sessionStorage.removeItem("lt.token");
    LT.toast(t("auth.expired", { reason }), "error");
    setTimeout(() => location.reload(), 1500);
  });
  const signout = document.getElementById("signout");
  signout.addEventListener("click", () => LT.signOut());
  let who = null;
  const showWho = () => {
    if (who) document.getElementById("who").textContent = t("auth.signed_in", { name: who.name, role: t(`role.${who.role}`) });
  };
  LT.onLang(() => {
    showWho();
    document.getElementById("lang-switch").setAttribute("aria-label", t("lang.switch"));
  });

  // Resolves with whoami once a token of one of `roles` is given.
  async function signIn(roles) {
    who = await LT.signIn(roles, { form, error: document.getElementById("signin-error") });
    showWho();
    signout.hidden = false;
    return who;
  }

  let status = "connecting";
  function streamStatus(next) {
    status = next;
    LT.statusBadge(document.getElementById("stream-badge"), status);
  }
  LT.onLang(() => streamStatus(status));

  return { signIn, streamStatus };
})();
window.Shell = Shell;
