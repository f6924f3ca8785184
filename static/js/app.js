// Tribunal: small progressive enhancements. Pages work without this file.
(function () {
  "use strict";

  // The one test of "is the user typing": keys then belong to the field, not to a page shortcut.
  // A focused checkbox, radio or button takes no text, so shortcuts still work there.
  var Tribunal = window.Tribunal = window.Tribunal || {};
  Tribunal.isTyping = function (element) {
    return !!element && (element.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(element.tagName)) &&
      !/^(radio|checkbox|button|submit|reset)$/.test(element.type || "");
  };

  // "/" focuses the element that declares data-hotkey="/" (the search box), unless the user is typing.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (Tribunal.isTyping(document.activeElement)) return;
    var target = document.querySelector('[data-hotkey="/"]');
    if (target) {
      event.preventDefault();
      target.focus();
      if (target.select) target.select();
    }
  });

  // A link to a turn (#turn-12) opens its folded tool payload, so the target is readable at once.
  function openTarget() {
    if (!location.hash) return;
    var target = document.getElementById(location.hash.slice(1));
    if (target) {
      target.querySelectorAll("details.tool").forEach(function (d) { d.open = true; });
    }
  }
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("DOMContentLoaded", openTarget);
})();
