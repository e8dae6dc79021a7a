// The console's only script, served by the gateway (the page's policy forbids inline script). It shows times in
// the operator's time zone, turns local expiry inputs into ISO times, copies a new token's secret, and refreshes the
// request log in place. Every page works without it, in UTC.

/** Shows every `<time datetime>` under `root` in the browser's time zone; recent ones to the second, dated if not today. */
function localTimes(root) {
  const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  const today = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
  // timeStyle cannot be mixed with month and day, so the earlier days' format spells its fields out.
  const earlier = new Intl.DateTimeFormat(undefined, {
    month: "short",
    day: "numeric",
    hour: "numeric",
    minute: "2-digit",
    second: "2-digit",
  });
  const day = new Date().toDateString();
  for (const element of root.querySelectorAll("time[datetime]")) {
    const at = new Date(element.getAttribute("datetime"));
    if (Number.isNaN(at.getTime())) continue;
    const recent = element.hasAttribute("data-recent");
    element.textContent = (recent ? at.toDateString() === day ? today : earlier : format).format(at);
  }
}

/** `YYYY-MM-DDTHH:MM` in local time, as a datetime-local input takes it. */
function localInputValue(date) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${
    pad(date.getMinutes())
  }`;
}

/** Fills local expiry inputs from their ISO value, and writes the ISO time back into the form on submit. */
function expiryInputs() {
  for (const input of document.querySelectorAll("input[data-into]")) {
    const iso = input.dataset.iso;
    if (iso) input.value = localInputValue(new Date(iso));
    input.form?.addEventListener("submit", () => {
      const target = input.form.elements.namedItem(input.dataset.into);
      if (target) target.value = input.value ? new Date(input.value).toISOString() : "";
    });
  }
}

/** Copies the text of the element a `[data-copy]` button names. */
function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = document.getElementById(button.dataset.copy);
      const text = source?.textContent.trim() ?? "";
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        // Without the clipboard API (a page served over plain HTTP to another host), select the text instead.
        const range = document.createRange();
        range.selectNodeContents(source);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        document.execCommand("copy");
      }
      const note = button.parentElement.querySelector("[data-copied]");
      if (note) note.hidden = false;
    });
  }
}

/** Reloads a `[data-refresh]` section every few seconds while the tab is visible, replacing it in place. */
function refreshing() {
  const section = document.querySelector("[data-refresh]");
  const seconds = Number(section?.dataset.refresh ?? 0);
  if (!section || !(seconds > 0)) return;
  let busy = false;
  setInterval(async () => {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById(section.id);
      // Signed out meanwhile, or the key changed: show the sign-in page.
      if (!fresh) return location.reload();
      const current = document.getElementById(section.id);
      current.replaceWith(document.adoptNode(fresh));
      localTimes(fresh);
    } catch {
      // The gateway is restarting or unreachable: try again at the next tick.
    } finally {
      busy = false;
    }
  }, seconds * 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  for (const element of document.querySelectorAll("[data-zone]")) element.textContent = zone;
  localTimes(document);
  expiryInputs();
  copyButtons();
  refreshing();
});
