// Tribunal review screen: keyboard shortcuts, the turn's audio segment, quoted spans, time spent.
// The page works without this file (plain forms); this makes it fast with the keyboard alone.
(function () {
  "use strict";

  var opened = Date.now();

  function $(selector) { return document.querySelector(selector); }
  function $all(selector) { return Array.prototype.slice.call(document.querySelectorAll(selector)); }

  var typing = window.Tribunal.isTyping; // app.js, loaded first on every page

  // ---- the audio segment: seek to the turn's start, stop at its end -------------------------------
  var audio = $("#segment-audio");
  var startS = audio ? Number(audio.dataset.startMs) / 1000 : 0;
  var endS = audio && audio.dataset.endMs !== "" ? Number(audio.dataset.endMs) / 1000 : Infinity;

  function togglePlay() {
    if (!audio) return;
    if (!audio.paused) { audio.pause(); return; }
    if (audio.currentTime < startS || audio.currentTime >= endS - 0.01) audio.currentTime = startS;
    var played = audio.play();
    if (played && played.catch) played.catch(function () {});
  }
  if (audio) {
    audio.addEventListener("loadedmetadata", function () {
      if (audio.currentTime < startS) audio.currentTime = startS;
    });
    audio.addEventListener("timeupdate", function () {
      if (audio.currentTime >= endS) {
        audio.pause();
        audio.currentTime = startS;
        audio.dataset.segmentPlayed = "true";
      }
    });
  }

  // ---- verdicts: a current one for a/d, moved with j/k or by focusing it ---------------------------
  function verdicts() { return $all(".review-verdict"); }
  function currentVerdict() {
    var focused = document.activeElement && document.activeElement.closest && document.activeElement.closest(".review-verdict");
    return focused || $(".review-verdict.is-current") || verdicts()[0];
  }
  function makeCurrent(verdict, focus) {
    verdicts().forEach(function (v) { v.classList.toggle("is-current", v === verdict); });
    if (verdict && focus) verdict.focus();
  }
  document.addEventListener("focusin", function (event) {
    var verdict = event.target.closest && event.target.closest(".review-verdict");
    if (verdict) makeCurrent(verdict, false);
  });
  function moveVerdict(step) {
    var list = verdicts();
    if (!list.length) return;
    var index = list.indexOf(currentVerdict());
    makeCurrent(list[Math.max(0, Math.min(list.length - 1, index + step))], true);
  }
  function answer(value) {
    var verdict = currentVerdict();
    if (!verdict) return;
    var radio = verdict.querySelector('input[data-agreement="' + value + '"]');
    if (!radio) return;
    radio.checked = true;
    verdict.dataset.answered = value;
    // Move on to the next verdict nobody answered yet, so a run of "a a a" labels every verdict.
    var list = verdicts();
    var next = list.slice(list.indexOf(verdict) + 1).find(function (v) { return !v.dataset.answered; });
    makeCurrent(next || verdict, true);
  }

  // ---- dialogs ------------------------------------------------------------------------------------
  function openDialog(id, focusSelector) {
    var dialog = document.getElementById(id);
    if (!dialog || dialog.open) return;
    dialog.showModal();
    var target = focusSelector ? dialog.querySelector(focusSelector) : null;
    if (target) target.focus();
  }
  $all("dialog [data-action=close]").forEach(function (button) {
    button.addEventListener("click", function () { button.closest("dialog").close(); });
  });

  // ---- submitting ---------------------------------------------------------------------------------
  var form = $("#review-form");
  function submitReview() {
    if (form) {
      var spent = form.querySelector("[data-seconds-spent]");
      if (spent) spent.value = String(Math.round((Date.now() - opened) / 1000));
      form.requestSubmit();
      return;
    }
    var next = $("[data-action=next]");
    if (next) next.click();
  }

  $all("[data-action=play]").forEach(function (b) { b.addEventListener("click", togglePlay); });
  $all("[data-action=help]").forEach(function (b) { b.addEventListener("click", function () { openDialog("help-dialog"); }); });
  $all("[data-action=skip]").forEach(function (b) { b.addEventListener("click", function () { openDialog("skip-dialog", "textarea"); }); });
  if (form) {
    form.addEventListener("submit", function () {
      var spent = form.querySelector("[data-seconds-spent]");
      if (spent && !spent.value) spent.value = String(Math.round((Date.now() - opened) / 1000));
    });
  }

  // ---- quoted span: selecting text in the turn under review fills the field ------------------------
  var span = $("#review-span");
  function takeSelection() {
    var selection = window.getSelection();
    if (!span || !selection || selection.isCollapsed) return;
    var target = $("#target-turn");
    if (!target || !target.contains(selection.anchorNode) || !target.contains(selection.focusNode)) return;
    var text = selection.toString().trim();
    if (text) span.value = text;
  }
  document.addEventListener("mouseup", takeSelection);
  document.addEventListener("keyup", function (event) { if (event.shiftKey) takeSelection(); });

  // ---- the keys -----------------------------------------------------------------------------------
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey) return;
    var active = document.activeElement;
    var dialogOpen = $("dialog[open]");
    if (event.key === "Escape") {
      if (typing(active)) { active.blur(); event.preventDefault(); }
      return;  // an open <dialog> closes itself on Escape
    }
    if (event.key === "Enter" && event.ctrlKey && form && form.contains(active)) {
      event.preventDefault();
      submitReview();
      return;
    }
    if (event.ctrlKey || dialogOpen || typing(active)) return;
    var key = event.key;
    if (/^[0-9]$/.test(key)) {
      var rating = form && form.querySelector('input[name=rating][data-digit="' + key + '"]');
      if (rating) { rating.checked = true; rating.focus(); event.preventDefault(); }
      return;
    }
    var buttonFocused = active && /^(BUTTON|A|SUMMARY)$/.test(active.tagName);
    switch (key) {
      case "a": answer("agree"); break;
      case "d": answer("disagree"); break;
      case "j": moveVerdict(1); break;
      case "k": moveVerdict(-1); break;
      case "c": var comment = $("#review-comment"); if (comment) comment.focus(); break;
      case "t": var first = form && form.querySelector("input[name=categories]"); if (first) first.focus(); break;
      case "s": if (form) openDialog("skip-dialog", "textarea"); break;
      case "p": togglePlay(); break;
      case " ":
        if (buttonFocused || (active && active.type === "checkbox") || (active && active.type === "radio")) return;
        togglePlay();
        break;
      case "n": submitReview(); break;
      case "Enter":
        if (buttonFocused) return;
        submitReview();
        break;
      case "?": openDialog("help-dialog"); break;
      default: return;
    }
    event.preventDefault();
  });

  // The turn under review starts in view.
  var target = $("#target-turn");
  if (target && target.scrollIntoView) target.scrollIntoView({ block: "center" });
})();
