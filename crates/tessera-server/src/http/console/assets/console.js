// Tessera console enhancements. Every page works without this file: forms post and pages render.
// With it: live counters over server-sent events (/console/live) and, on the gate page, a
// camera scan where the browser has BarcodeDetector.
(function () {
  "use strict";

  // Live counters: any element with data-live="<name>" shows the named figure of each
  // `counters` event.
  function live() {
    var targets = document.querySelectorAll("[data-live]");
    if (!targets.length || !window.EventSource) return;
    var source = new EventSource("/console/live");
    source.addEventListener("counters", function (e) {
      var data;
      try { data = JSON.parse(e.data); } catch (_) { return; }
      targets.forEach(function (el) {
        var v = data[el.getAttribute("data-live")];
        if (v !== undefined && v !== null) el.textContent = String(v);
      });
    });
  }

  // The gate's camera: reads a QR code and submits the gate form with it.
  function camera() {
    var button = document.getElementById("scan");
    var form = document.getElementById("gate-form");
    var input = document.getElementById("f-code");
    if (!button || !form || !input) return;
    if (!("BarcodeDetector" in window) || !navigator.mediaDevices) {
      button.hidden = true;
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var video = document.getElementById("scan-video");
      var detector = new window.BarcodeDetector({ formats: ["qr_code"] });
      navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } }).then(function (stream) {
        video.srcObject = stream;
        video.hidden = false;
        return video.play().then(function () {
          var tick = function () {
            detector.detect(video).then(function (codes) {
              if (codes.length) {
                stream.getTracks().forEach(function (t) { t.stop(); });
                input.value = codes[0].rawValue;
                form.submit();
              } else {
                requestAnimationFrame(tick);
              }
            }, function () { requestAnimationFrame(tick); });
          };
          tick();
        });
      }, function () { button.hidden = true; });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { live(); camera(); });
})();
