// About page: copies the BibTeX entry to the clipboard (a static file: pages carry no inline script).
(function () {
  const button = document.getElementById("copy-bibtex");
  if (!button) return;
  const status = document.getElementById("copy-bibtex-status");
  button.addEventListener("click", async () => {
    const text = document.getElementById(button.dataset.copies).textContent;
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = "Copied.";
    } catch (error) {
      const range = document.createRange();  // no clipboard access (plain http): select it for Ctrl-C
      range.selectNodeContents(document.getElementById(button.dataset.copies));
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      status.textContent = "Selected: press Ctrl-C to copy.";
    }
  });
})();
