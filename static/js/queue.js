// Tribunal review queue: n (or Enter) starts reviewing, / goes to the filters (app.js), ? lists the keys.
// The page works without this file (the button is a plain form); this makes it fast with the keyboard.
(function () {
  "use strict";

  var start = document.getElementById("start-reviewing");
  var filters = document.querySelector("form.filters");
  var help = document.getElementById("queue-help");

  var typing = window.Tribunal.isTyping; // app.js, loaded first on every page

  function onControl(element) {
    return element && /^(A|BUTTON|SUMMARY|INPUT|SELECT|TEXTAREA)$/.test(element.tagName);
  }

  // htmx redraws the list when a filter changes but not the start form, so the form takes the filters
  // on screen at the moment it is sent: "start" always claims from the slice the reviewer is looking at.
  if (start && start.form && filters) {
    start.form.addEventListener("submit", function () {
      var form = start.form;
      Array.prototype.slice.call(form.querySelectorAll("input[data-filter]")).forEach(function (input) {
        input.remove();
      });
      new FormData(filters).forEach(function (value, key) {
        if (!value) return;
        var input = document.createElement("input");
        input.type = "hidden";
        input.name = key;
        input.value = value;
        input.setAttribute("data-filter", "");
        form.appendChild(input);
      });
    });
  }

  function startReviewing() {
    if (start && start.form) start.form.requestSubmit(start);
  }

  function showHelp() {
    if (help && !help.open) help.showModal();
  }
  Array.prototype.slice.call(document.querySelectorAll("#queue-help [data-action=close]")).forEach(function (button) {
    button.addEventListener("click", function () { help.close(); });
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey || event.ctrlKey) return;
    var active = document.activeElement;
    if (event.key === "Escape") {
      if (typing(active)) { active.blur(); event.preventDefault(); }
      return;  // an open <dialog> closes itself on Escape
    }
    if (document.querySelector("dialog[open]") || typing(active)) return;
    switch (event.key) {
      case "n": startReviewing(); break;
      case "Enter":
        if (onControl(active)) return;  // a focused link or button does its own thing
        startReviewing();
        break;
      case "?": showHelp(); break;
      default: return;
    }
    event.preventDefault();
  });
})();
