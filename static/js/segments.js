// Conversation and dispute pages: each turn's button plays just that turn's stretch of the
// conversation's recording (seek to its start, pause at its end). Without this file the player
// still plays the whole recording.
(function () {
  "use strict";

  var stopAt = Infinity;
  var startedAt = 0;

  function player() { return document.querySelector("audio[data-segment-player]"); }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-play-segment]");
    if (!button) return;
    var audio = player();
    if (!audio) return;
    startedAt = Number(button.dataset.startMs) / 1000;
    stopAt = Number(button.dataset.endMs) / 1000;
    document.querySelectorAll("[data-play-segment].is-playing").forEach(function (b) { b.classList.remove("is-playing"); });
    button.classList.add("is-playing");
    audio.dataset.segmentStartMs = button.dataset.startMs;
    audio.dataset.segmentEndMs = button.dataset.endMs;
    audio.currentTime = startedAt;
    var played = audio.play();
    if (played && played.catch) played.catch(function () {});
  });

  document.addEventListener("timeupdate", function (event) {
    var audio = event.target;
    if (!audio.matches || !audio.matches("audio[data-segment-player]")) return;
    if (audio.currentTime >= stopAt) {
      audio.pause();
      audio.dataset.segmentPlayed = "true";
      stopAt = Infinity;
      document.querySelectorAll("[data-play-segment].is-playing").forEach(function (b) { b.classList.remove("is-playing"); });
    }
  }, true);
})();
