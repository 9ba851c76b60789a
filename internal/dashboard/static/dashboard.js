// paygate dashboard: conveniences only. Every page works without this
// file; it adds copy buttons and remembers the browser's time zone.
"use strict";

(function () {
  // The time zone: set the tz cookie once from the browser, so times are
  // shown in the user's zone from the next page on. The account page sets
  // it without JavaScript.
  function hasCookie(name) {
    return document.cookie.split(";").some(function (c) {
      return c.trim().indexOf(name + "=") === 0;
    });
  }
  try {
    if (!hasCookie("tz")) {
      var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (zone) {
        var secure = location.protocol === "https:" ? "; Secure" : "";
        document.cookie = "tz=" + encodeURIComponent(zone) +
          "; Path=/dashboard; Max-Age=31536000; SameSite=Lax" + secure;
      }
    }
  } catch (e) {
    // No Intl: times stay in UTC.
  }

  // Copy buttons: <button class="copy" data-copy="ID" hidden> copies the
  // text of the element with that id. They stay hidden without a
  // clipboard.
  function setup() {
    if (!navigator.clipboard || !window.isSecureContext) {
      return;
    }
    document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
      var target = document.getElementById(b.getAttribute("data-copy"));
      if (!target) {
        return;
      }
      b.hidden = false;
      var label = b.textContent;
      b.addEventListener("click", function () {
        navigator.clipboard.writeText(target.textContent.trim()).then(function () {
          b.textContent = "Copied";
          setTimeout(function () { b.textContent = label; }, 2000);
        }, function () {
          b.textContent = "Copy failed: select the text";
        });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
