// The page's only script of its own (the CSP allows no inline code and no eval, so no hx-on):
// clear the question box once the server has accepted the question.
document.addEventListener("htmx:afterRequest", function (event) {
  var form = event.target;
  if (form && form.id === "ask-form" && event.detail.xhr.status === 200) {
    form.reset();
  }
});
