// The copy buttons of the account screen: a button with data-copy="ID" copies the text of the element ID.
// The pages work without it (the text can be selected by hand).
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  button.addEventListener("click", function () {
    var text = document.getElementById(button.dataset.copy).textContent;
    navigator.clipboard.writeText(text).then(function () { button.textContent = "Copied"; });
  });
});
