// The page's only script of its own (the CSP allows no inline code and no eval, so no hx-on).

// Enter asks, as in any chat; Shift+Enter starts a new line, and Enter that ends an input method's
// composition (accented or CJK text) only ends it. requestSubmit goes through the form's checks
// and htmx's submit handler, like a click on "Ask".
document.addEventListener("keydown", function (event) {
  var box = event.target;
  if (box && box.id === "question" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    if (box.form && box.value.trim()) box.form.requestSubmit();
  }
});

// Clear the question box once the server has accepted the question.
document.addEventListener("htmx:afterRequest", function (event) {
  var form = event.target;
  if (form && form.id === "ask-form" && event.detail.xhr.status === 200) {
    form.reset();
  }
});

// The document viewer beside the page. On a wide screen a citation link (`a[data-pane]`) opens
// its passage in #doc-pane through htmx (the viewer's own URL answers htmx with the pane), so the
// chat stays where it is; on a narrow screen, with a modifier key, or without htmx the link opens
// the viewer's page. Opening pushes one history entry, so Back closes the pane (Forward opens it
// again, and so does a reload of that entry); Esc and the close button close it too, and focus
// goes back to the citation.
(function () {
  var WIDE = window.matchMedia("(min-width: 1000px)");
  var opener = null;

  function pane() { return document.getElementById("doc-pane"); }
  function isOpen() { var p = pane(); return !!p && !p.hidden; }

  function showPassage(content) {
    var scroller = content.querySelector(".pane-scroll");
    var cited = content.querySelector(".doc-passage.at");
    if (!scroller) return;
    scroller.scrollTop = cited
      ? scroller.scrollTop + cited.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 12
      : 0;
    (cited || scroller).focus({preventScroll: true});
  }

  function load(url, anchor) {
    var p = pane();
    p.setAttribute("aria-busy", "true");
    // asked first, so the server renders the document while the page makes room for the pane
    var request = htmx.ajax("GET", url, {target: "#doc-pane-content", swap: "innerHTML"});
    var before = anchor ? anchor.getBoundingClientRect().top : null;
    var root = document.documentElement;
    root.style.overflowAnchor = "none";  // the browser's own scroll anchoring would move it twice
    p.hidden = false;
    document.body.classList.add("pane-open");
    if (anchor && before !== null) {  // the page narrowed: keep the clicked mark where it was
      window.scrollBy(0, anchor.getBoundingClientRect().top - before);
    }
    requestAnimationFrame(function () { requestAnimationFrame(function () { root.style.overflowAnchor = ""; }); });
    return request.then(function () {
      p.removeAttribute("aria-busy");
      showPassage(document.getElementById("doc-pane-content"));
    }, function () {  // no answer from the server: say so, and offer the page itself
      p.removeAttribute("aria-busy");
      var content = document.getElementById("doc-pane-content"), problem = document.createElement("p");
      var link = document.createElement("a");
      problem.className = "problem";
      problem.setAttribute("role", "alert");
      problem.textContent = "The document could not be loaded. ";
      link.href = url;
      link.textContent = "Open it as a page";
      problem.appendChild(link);
      content.replaceChildren(problem);
    });
  }

  function close() {
    var p = pane();
    if (!p || p.hidden) return;
    p.hidden = true;
    document.body.classList.remove("pane-open");
    document.getElementById("doc-pane-content").innerHTML = "";
    if (opener && document.body.contains(opener)) opener.focus({preventScroll: true});
    opener = null;
  }

  function leave() {  // close, spending the history entry that opening pushed
    if (history.state && history.state.docPane) history.back();
    else close();
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-pane]");
    if (link && !event.defaultPrevented && event.button === 0 && !event.metaKey && !event.ctrlKey &&
        !event.shiftKey && !event.altKey && WIDE.matches && window.htmx && pane()) {
      event.preventDefault();
      var url = link.href.split("#")[0];
      if (isOpen()) history.replaceState({docPane: url}, "");
      else history.pushState({docPane: url}, "");
      opener = link;
      load(url, link);
      return;
    }
    if (event.target.closest && event.target.closest("[data-pane-close]")) {
      leave();
      return;
    }
    var toc = event.target.closest && event.target.closest("#doc-pane .pane-toc a[href^='#']");
    if (toc) {  // within the pane: scroll it, leave the address (and Back) alone
      event.preventDefault();
      var heading = document.getElementById(toc.getAttribute("href").slice(1));
      var scroller = pane().querySelector(".pane-scroll");
      if (heading && scroller) {
        scroller.scrollTop += heading.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 8;
      }
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && isOpen()) {
      event.preventDefault();
      leave();
    }
  });

  // A reload, or a return to this page, lands on the entry that opening pushed: open it again.
  document.addEventListener("DOMContentLoaded", function () {
    if (history.state && history.state.docPane && WIDE.matches && window.htmx && pane()) {
      load(history.state.docPane, null);
    }
  });

  window.addEventListener("popstate", function (event) {
    if (event.state && event.state.docPane && pane()) load(event.state.docPane, null);
    else close();
  });
})();
